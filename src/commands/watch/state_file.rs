//! `--state` as watch's own (docs/watch.md "Durable"): one `watch` at a time on it, held by an
//! advisory lock on a file beside it (`.NAME.lock`, for as long as the process lives: the
//! state itself is replaced by a rename at every save, so it cannot hold the lock), and only a
//! regular file read as a state: a FIFO or a device is refused before anything opens it (a
//! FIFO would block the start), and bytes that are not a watch state are refused (exit 3)
//! and never overwritten.
//!
//! Owns: [`lock`] and [`read`]. Must not: decide what a state holds (that is `watch::state`).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// The lock beside `path`, held until the returned file is dropped; exit 1 naming `path` when
/// another process still holds it after [`LOCK_WAIT`].
pub(super) fn lock(path: &Path) -> Result<File, CliError> {
    let lock = lock_path(path);
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A link planted at the lock's name is not followed.
        open.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let file = open.open(&lock).map_err(|e| {
        CliError::failed(format!(
            "cannot lock `--state` `{}`: cannot open `{}`: {e}",
            path.display(),
            lock.display()
        ))
    })?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let since = std::time::Instant::now();
        let try_lock = || {
            // SAFETY: flock on a descriptor this function owns.
            match unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        };
        let held = |r: &std::io::Result<()>| matches!(r, Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK));
        let mut locked = try_lock();
        // A process killed a moment ago (`kill -9`, then a supervisor's tight loop) holds
        // its lock until the kernel has closed its files: waited for, up to `LOCK_WAIT`.
        while held(&locked) && since.elapsed() < LOCK_WAIT {
            std::thread::sleep(LOCK_RETRY);
            locked = try_lock();
        }
        if let Err(e) = locked {
            return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                CliError::failed(format!(
                    "`--state` `{}` is in use: another retryctl watch holds it (its lock `{}`, waited for {} seconds)",
                    path.display(),
                    lock.display(),
                    LOCK_WAIT.as_secs()
                ))
                .with_hint("stop the other watch, or give this one a --state of its own")
            } else {
                CliError::failed(format!("cannot lock `--state` `{}`: {e}", path.display()))
            });
        }
    }
    Ok(file)
}

/// How long [`lock`] waits for a lock another process holds before it refuses.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How often it tries again meanwhile.
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// `.NAME.lock` beside `path`.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".lock");
    path.with_file_name(name)
}

/// `--state`'s text, or `None` when there is no such file. A path that is not a regular file
/// (a FIFO, a device, a directory) is refused without opening it, and bytes that are not UTF-8
/// are not a state: both exit 3, naming the file.
pub(super) fn read(path: &Path) -> Result<Option<String>, CliError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CliError::failed(format!(
                "cannot read `--state` `{}`: {e}",
                path.display()
            )))
        }
    };
    if !meta.is_file() {
        return Err(CliError::invalid(format!(
            "`--state` `{}` is not a regular file ({}): watch keeps its state in a file of its own",
            path.display(),
            kind(&meta)
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::failed(format!("cannot read `--state` `{}`: {e}", path.display())))?;
    String::from_utf8(bytes).map(Some).map_err(|_| {
        CliError::invalid(format!(
            "`--state` `{}` cannot be read: not a watch state (not UTF-8 text)",
            path.display()
        ))
        .with_hint("move it away to start counting afresh")
    })
}

/// What a file that is not a regular one is.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    "not a file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_while_the_first_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let held = lock(&path).unwrap();
        let e = lock(&path).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::Failure);
        assert!(
            e.message.contains("is in use: another retryctl watch holds it"),
            "{}",
            e.message
        );
        drop(held);
        assert!(lock(&path).is_ok());
    }

    #[test]
    fn a_lock_released_within_the_wait_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let held = lock(&path).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(held);
        });
        assert!(lock(&path).is_ok());
        release.join().unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_being_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&path).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::InvalidInput);
        assert_eq!(
            e.message,
            format!(
                "`--state` `{}` is not a regular file (a FIFO): watch keeps its state in a file of its own",
                path.display()
            )
        );
        std::fs::write(dir.path().join("bytes"), [0xff, 0xfe, 0x00]).unwrap();
        let e = read(&dir.path().join("bytes")).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::InvalidInput);
        assert_eq!(read(&dir.path().join("none")).unwrap(), None);
    }
}
