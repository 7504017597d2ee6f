//! The temporary files a command leaves in the file system while it runs (`--output-file`'s
//! result on its way, which is renamed over FILE, so it needs a name), removed when SIGTERM,
//! SIGINT or SIGHUP ends the process (a preempted pod, Ctrl-C, a closed terminal): one
//! mechanism for every such file (docs/cli.md, "Signals and temporary files"). A temporary
//! file that needs no name has none (suggest's copy, held output, changed jobs held back):
//! nothing is left of it whatever ends the process, and it is not armed here.
//!
//! Owns: the handlers and the table of paths they remove. A path is [`arm`]ed while its file
//! exists and disarmed (its [`Armed`] dropped) once the file is gone or kept; the handler
//! unlinks every armed path, then lets the signal end the process as it would have without
//! the handler (a shell, like Kubernetes, reports 143, 130 or 129: SIGHUP behaves as
//! SIGTERM). A signal ignored when the handlers are installed (`nohup`, a shell's `trap ''
//! INT`) is left ignored, as the parent asked. Must not: remove anything it was not handed,
//! or do in the handler what is not async-signal-safe (allocate, lock, read freed memory).
//! Only SIGKILL (or a power cut) can leave an armed file behind.

/// While alive, a signal removes its path before ending the process.
pub struct Armed {
    #[cfg(unix)]
    slot: Option<usize>,
}

/// Arms `path`: removed if a signal ends the process before the [`Armed`] is dropped.
#[cfg(unix)]
pub fn arm(path: &std::path::Path) -> Armed {
    Armed { slot: unix::arm(path) }
}

#[cfg(not(unix))]
pub fn arm(_: &std::path::Path) -> Armed {
    Armed {}
}

#[cfg(unix)]
impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            unix::disarm(slot);
        }
    }
}

/// With `libc` (already a dependency): `unlink`, `signal` and `raise` are async-signal-safe;
/// each path is a C string made before the handler can read it and never freed (a handler on
/// another thread may have read the pointer), so the handler neither allocates nor reads
/// freed memory. A fixed table of slots, taken and given back with atomics: no lock.
#[cfg(unix)]
mod unix {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr::null_mut;
    use std::sync::atomic::{AtomicPtr, Ordering};
    use std::sync::Once;

    /// More than a command keeps at once (`--output-file`'s file);
    /// a path past them is not armed (a signal would leave it behind, nothing worse).
    const SLOTS: usize = 8;

    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: AtomicPtr<libc::c_char> = AtomicPtr::new(null_mut());
    static ARMED: [AtomicPtr<libc::c_char>; SLOTS] = [EMPTY; SLOTS];
    static INSTALL: Once = Once::new();

    pub fn arm(path: &Path) -> Option<usize> {
        // A path from the file system has no NUL byte.
        let c = CString::new(path.as_os_str().as_bytes()).ok()?.into_raw();
        INSTALL.call_once(install);
        for (i, slot) in ARMED.iter().enumerate() {
            if slot
                .compare_exchange(null_mut(), c, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Some(i);
            }
        }
        // SAFETY: `c` came from `into_raw` above and was never shared.
        drop(unsafe { CString::from_raw(c) });
        None
    }

    pub fn disarm(slot: usize) {
        // Leaked on purpose: a handler on another thread may have read the pointer.
        ARMED[slot].store(null_mut(), Ordering::SeqCst);
    }

    extern "C" fn on_signal(sig: libc::c_int) {
        for slot in &ARMED {
            let path = slot.swap(null_mut(), Ordering::SeqCst);
            // SAFETY: `path` is null or a leaked, NUL-terminated C string; unlink is
            // async-signal-safe.
            if !path.is_null() {
                unsafe { libc::unlink(path) };
            }
        }
        // SAFETY: signal and raise are async-signal-safe. The signal is blocked while its
        // handler runs, so the raised one is delivered, with the default action (the end of
        // the process), as soon as the handler returns.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }

    fn install() {
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // SAFETY: a zeroed sigaction is valid (empty mask, no flags); the handler is an
            // `extern "C" fn(c_int)`, what `sa_sigaction` holds without SA_SIGINFO. Reading
            // the current action (a null new one) changes nothing.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, null_mut(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = libc::SA_RESTART;
                libc::sigaction(sig, &action, null_mut());
            }
        }
    }
}
