//! Children a test signals: their signal dispositions set by the test, never inherited, and
//! their end waited for with a time limit. A test run may inherit a signal ignored (`nohup`
//! ignores SIGHUP; a shell's background job, SIGINT and SIGQUIT) or blocked, and a child
//! rightly keeps an ignored signal ignored (docs/cli.md, "Signals and temporary files"): a
//! test that sent it and waited without a limit would wait forever.

use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// The signals the tests send to a child to end it.
const SENT: [libc::c_int; 6] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGALRM,
];

/// `cmd`'s child starts with [`SENT`] at their default action and unblocked, whatever this
/// process has: a test that wants one ignored sets it after this (a later `pre_exec`, or the
/// `trap` of the shell the child runs).
pub fn default_dispositions(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2), sigemptyset(3), sigaddset(3) and sigprocmask(2) only, between fork
    // and exec: async-signal-safe, no allocation.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in SENT {
                if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
                libc::sigaddset(&mut set, sig);
            }
            if libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// The child's exit, waited for `secs` seconds at most: past that it is killed and the test
/// fails, saying `what` did not end.
pub fn wait_within(child: &mut Child, secs: u64, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
