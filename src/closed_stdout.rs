//! A standard output that was closed when the process started (`retryctl … >&-`) is an output
//! that cannot be written, as `/dev/full` is (docs/cli.md, "Output that cannot be written"):
//! the command fails, exit 1, `error: cannot write stdout: bad file descriptor`.
//!
//! std's runtime start-up opens `/dev/null` on a closed descriptor 0–2 before `main` (so that
//! a file opened later never takes descriptor 1), after which every write to stdout succeeds
//! and goes nowhere: the output would be lost without a word. So descriptor 1 is looked at
//! before that, by a function the C library calls before `main` ([`LOOK`]), and `main` hands
//! the commands [`Closed`] for stdout: every write fails as one to a closed descriptor does
//! (`EBADF`). A closed pipe is another thing (the reader had enough: `EPIPE`, quiet).
//!
//! Owns: that look and [`Closed`]. Must not: allocate or do anything else before `main`. Off
//! Linux nothing runs before `main`: a closed stdout there is `/dev/null`, as std makes it.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Whether descriptor 1 was closed before std's start-up opened `/dev/null` there.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Called by the C library (glibc and musl alike) before `main`, before std's runtime
/// start-up; glibc passes `argc`, `argv` and `envp`, which it does not read.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static LOOK: extern "C" fn() = look;

#[cfg(target_os = "linux")]
extern "C" fn look() {
    // SAFETY: F_GETFD only reads the descriptor's flags: -1 and EBADF when it is not open.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1
        && io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
    CLOSED.store(closed, Relaxed);
}

/// Whether the process was started with its standard output closed.
pub fn was_closed() -> bool {
    CLOSED.load(Relaxed)
}

/// Stdout when it was closed: every write fails with `EBADF`, as one to the closed descriptor
/// would; a flush with nothing to write succeeds (a command that prints nothing, `watch`,
/// runs as before).
pub struct Closed;

impl io::Write for Closed {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::from_raw_os_error(libc::EBADF))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
