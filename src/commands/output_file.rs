//! `--output-file FILE` of `simulate`, `tune`, `merge` and `history` (docs/cli.md, "Writing a
//! result to a file"): the result is written to a temporary file beside FILE and renamed over
//! FILE once complete, so a reader (the merge of a sharded run, a pipeline step) never sees half
//! a result.
//!
//! FILE is replaced exactly when the command wrote a result, whatever its exit status (0, 1
//! or 3). When it wrote none — an error (usage, unreachable, a refusal that prints nothing),
//! or SIGTERM/SIGINT mid-run (a preempted pod) — FILE stays as it was and the temporary file
//! is removed: on an error by its destructor, on a signal by the handler armed while the
//! temporary file exists, which unlinks it and then lets the signal end the process as it
//! would have without the handler (a shell, like Kubernetes, reports 143 or 130). Only
//! SIGKILL (or a power cut) can leave a `.FILE.*.tmp` behind.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::app::Context;
use crate::error::{CliError, ExitCode};

/// Runs `run` with its stdout going to `path` (when given) through an [`AtomicFile`], and
/// replaces `path` when the command wrote a result: it returned (no error) with 0, 1 or 3,
/// and it wrote something or succeeded (an empty export is a result; an exit 1 or 3 with
/// nothing written is a refusal or invalid input reported on stderr only).
pub fn run_to(
    ctx: &mut Context<'_>,
    path: Option<&Path>,
    run: impl FnOnce(&mut Context<'_>) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    let Some(path) = path else { return run(ctx) };
    let mut file = AtomicFile::create(path)?;
    let result = {
        let mut sub = Context {
            global: ctx.global.clone(),
            style: ctx.style,
            out: &mut file,
            out_is_stdout: false,
            err: &mut *ctx.err,
        };
        run(&mut sub)
    };
    let code = result?;
    let wrote = file.written > 0 || code == ExitCode::Success;
    if wrote && matches!(code, ExitCode::Success | ExitCode::Failure | ExitCode::InvalidInput) {
        file.commit()?;
    }
    Ok(code)
}

/// A result on its way to `path`: a temporary file in `path`'s directory until [`commit`];
/// dropped uncommitted, it is removed and `path` is left alone.
///
/// [`commit`]: AtomicFile::commit
pub struct AtomicFile {
    // Declared (so dropped) before the signal guard: the temporary file is gone before the
    // handler forgets it.
    file: BufWriter<tempfile::NamedTempFile>,
    path: PathBuf,
    written: u64,
    _armed: signal::Armed,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<AtomicFile, CliError> {
        let cannot = |e: &io::Error| {
            CliError::failed(format!(
                "cannot write `{}`: {}",
                path.display(),
                crate::input::io_reason(e)
            ))
        };
        let name = path
            .file_name()
            .ok_or_else(|| CliError::usage(format!("`--output-file {}` names no file", path.display())))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // What `File::create` gives a new file (0666 less the umask), not tempfile's 0600:
        // the result is read by the next step, maybe as another user of the volume.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(dir).map_err(|e| cannot(&e))?;
        let armed = signal::arm(tmp.path());
        Ok(AtomicFile {
            file: BufWriter::with_capacity(1 << 16, tmp),
            path: path.to_path_buf(),
            written: 0,
            _armed: armed,
        })
    }

    /// Flushes, syncs and renames the temporary file over `path`.
    pub fn commit(self) -> anyhow::Result<()> {
        let AtomicFile { file, path, _armed, .. } = self;
        let cannot = |e: &io::Error| {
            CliError::failed(format!(
                "cannot write `{}`: {}",
                path.display(),
                crate::input::io_reason(e)
            ))
        };
        let tmp = file.into_inner().map_err(|e| cannot(e.error()))?;
        tmp.as_file().sync_all().map_err(|e| cannot(&e))?;
        tmp.persist(&path).map_err(|e| cannot(&e.error))?;
        drop(_armed);
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// SIGTERM and SIGINT while a temporary file exists: unlink it, then end as the signal would
/// have. With `libc` (already a dependency): `unlink`, `signal` and `raise` are
/// async-signal-safe, and the path is a C string made before the handler can read it and
/// never freed (one per process), so the handler neither allocates nor reads freed memory.
#[cfg(unix)]
mod signal {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr::null_mut;
    use std::sync::atomic::{AtomicPtr, Ordering};
    use std::sync::Once;

    static TEMP: AtomicPtr<libc::c_char> = AtomicPtr::new(null_mut());
    static INSTALL: Once = Once::new();

    /// While alive, a signal removes the temporary file before ending the process.
    pub struct Armed;

    pub fn arm(path: &Path) -> Armed {
        // A path from the file system has no NUL byte.
        if let Ok(c) = CString::new(path.as_os_str().as_bytes()) {
            TEMP.store(c.into_raw(), Ordering::SeqCst);
            INSTALL.call_once(install);
        }
        Armed
    }

    impl Drop for Armed {
        fn drop(&mut self) {
            // Leaked on purpose: a handler on another thread may have read the pointer.
            TEMP.store(null_mut(), Ordering::SeqCst);
        }
    }

    extern "C" fn on_signal(sig: libc::c_int) {
        let path = TEMP.swap(null_mut(), Ordering::SeqCst);
        // SAFETY: `path` is null or a leaked, NUL-terminated C string; unlink, signal and
        // raise are async-signal-safe. The signal is blocked while its handler runs, so the
        // raised one is delivered, with the default action (the end of the process), as
        // soon as the handler returns.
        unsafe {
            if !path.is_null() {
                libc::unlink(path);
            }
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }

    fn install() {
        for sig in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: a zeroed sigaction is valid (empty mask, no flags); the handler is an
            // `extern "C" fn(c_int)`, what `sa_sigaction` holds without SA_SIGINFO.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = libc::SA_RESTART;
                libc::sigaction(sig, &action, null_mut());
            }
        }
    }
}

#[cfg(not(unix))]
mod signal {
    pub struct Armed;

    pub fn arm(_: &std::path::Path) -> Armed {
        Armed
    }
}
