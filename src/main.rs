//! The `retryctl` binary: parse the command line, run, report, exit. The only process exit.
//!
//! The C `main` is ours (`no_main`): std's runtime start-up reads `/proc/self/maps` line by
//! line with `sscanf` to place a guard for the main thread's stack, ~12% of a `validate`'s
//! instructions and a quarter of its system calls (SPEC §7 start-up bar; BENCHMARKS.md
//! "Start-up"). What of that start-up this program relies on is done here instead: standard
//! descriptors that are closed open `/dev/null`, and `SIGPIPE` is ignored. Arguments still
//! reach `std::env::args` (glibc hands them to std's initialiser before `main`). Given up: the
//! "has overflowed its stack" message (nesting is bounded by the parsers, 64 levels of YAML)
//! and the name `main` in a panic message.

#![no_main]

use std::io::Write;

use retryctl::allocator::Allocator;
use retryctl::error::{report, ExitCode};

// mimalloc for the commands that allocate in bulk, the C library's allocator for the others
// (src/allocator.rs; measured in BENCHMARKS.md "Allocator" and "Start-up").
#[global_allocator]
static GLOBAL: Allocator = Allocator::new();

/// The commands whose work is allocation (decoded histories, reports, requests).
const BULK_COMMANDS: [&[u8]; 3] = [b"simulate", b"history", b"serve"];

#[no_mangle]
extern "C" fn main(argc: std::ffi::c_int, argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    // Before anything allocates. Any argument naming a bulk command counts, wherever it is
    // (global flags may come first): a wrong guess only costs speed.
    // SAFETY: the C runtime passes `argc` valid NUL-terminated strings in `argv`.
    let args = unsafe { std::slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) };
    // SAFETY: as above; each is read without being kept.
    if args
        .iter()
        .skip(1)
        .any(|&a| BULK_COMMANDS.contains(&unsafe { std::ffi::CStr::from_ptr(a) }.to_bytes()))
    {
        GLOBAL.use_mimalloc();
    }
    init_process();
    let cli = match retryctl::cli::parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            let code = if e.use_stderr() {
                ExitCode::Usage
            } else {
                ExitCode::Success
            };
            std::process::exit(code.code().into());
        }
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut err = stderr.lock();
    let code = match retryctl::app::run(cli, &mut out, &mut err, retryctl::commands::dispatch) {
        Ok(code) => code,
        Err(e) => {
            let _ = out.flush();
            report(&e, &mut err)
        }
    };
    // A closed pipe (`retryctl get ... | head`) is not an error worth reporting.
    let _ = out.flush();
    std::process::exit(code.code().into());
}

/// What std's runtime start-up does that this program needs, as std does it.
fn init_process() {
    // A descriptor 0–2 that is closed would be taken by the next file opened (a policy file,
    // the server's database), and output meant for stdout or stderr would be written into it.
    for fd in 0..3 {
        // SAFETY: `fcntl(F_GETFD)` only reads the descriptor's flags.
        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
        // SAFETY: a NUL-terminated path. `open` returns the lowest free descriptor: the
        // closed one, as they are reopened in order.
        if closed && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } != fd {
            // Without `/dev/null` there is no safe way on: std aborts too.
            std::process::abort();
        }
    }
    // A write to a closed pipe is an `EPIPE` error the commands handle (`| head`), not a
    // signal that kills the process.
    // SAFETY: installing the ignore disposition has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}
