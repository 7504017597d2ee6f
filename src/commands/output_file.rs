//! `--output-file FILE` of the verbs the verb table (`cli::VERBS`) marks `output_file`:
//! `simulate`, `tune`, `suggest`, `merge` and `history` (docs/cli.md, "Writing a result to a
//! file"): a regular FILE (or one that does not exist yet) gets the result through
//! a temporary file beside it, renamed over it once complete, so a reader (the merge of a
//! sharded run, a pipeline step) never sees half a result. A symbolic link is followed: the
//! file it leads to is replaced that way (the temporary file beside *it*), and the link stays.
//! What is not a file — a device (`/dev/null`), a FIFO, a descriptor of this process
//! (`/dev/stdout`, `/dev/fd/N`) — is written straight through, as a shell's `>` would: a
//! rename would put a regular file in its place. A directory is a usage error.
//!
//! FILE is replaced exactly when the command wrote a result, whatever its exit status (0, 1
//! or 3). When it wrote none — an error (usage, unreachable, a refusal that prints nothing),
//! or SIGTERM/SIGINT/SIGHUP mid-run (a preempted pod, a closed terminal) — FILE stays as it
//! was and the temporary file is removed: on an error by its destructor, on a signal by
//! `on_signal`'s handler, armed while the temporary file exists.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::app::{Checked, Context};
use crate::error::{CliError, ExitCode};
use crate::input::MAX_LINKS;
use crate::on_signal::{self, Armed};
use crate::whole_file::{Mode, WholeFile};

/// Runs `run` with its stdout going to `path` (when given) through an [`OutputFile`], and
/// replaces `path` when the command wrote a result: it returned (no error) with 0, 1 or 3,
/// and it wrote something or succeeded (an empty export is a result; an exit 1 or 3 with
/// nothing written is a refusal or invalid input reported on stderr only). Written straight
/// through (a device, a FIFO), the output is flushed whatever the command did, as stdout is.
pub fn run_to(
    ctx: &mut Context<'_>,
    path: Option<&Path>,
    run: impl FnOnce(&mut Context<'_>) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    let Some(path) = path else { return run(ctx) };
    let mut file = OutputFile::create(path)?;
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
    // A write that failed mid-run, even one the command went past, is the command's end: the
    // result is cut short, and FILE stays as it was.
    let result = crate::app::settle(result, file.out.failed(), &mut *ctx.err);
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            file.abandon();
            return Err(e);
        }
    };
    let wrote = file.written > 0 || code == ExitCode::Success;
    if wrote && matches!(code, ExitCode::Success | ExitCode::Failure | ExitCode::InvalidInput) {
        file.commit()?;
    } else {
        file.abandon();
    }
    Ok(code)
}

/// A result on its way to `path`.
pub struct OutputFile {
    /// The sink, its first failed write kept (named as FILE was given).
    out: Checked<Sink>,
    /// FILE as given, for messages.
    shown: PathBuf,
    written: u64,
}

enum Sink {
    /// A temporary file in the directory of `target` (FILE, or the file its link leads to)
    /// until [`OutputFile::commit`]; dropped uncommitted, it is removed and `target` is left
    /// alone.
    Replace {
        // Declared (so dropped) before the signal guard: the temporary file is gone before
        // the handler forgets it.
        file: BufWriter<WholeFile>,
        _armed: Armed,
    },
    /// A device, a FIFO or a descriptor: written as the output comes.
    Through(BufWriter<File>),
}

/// Where FILE's result goes.
enum Resolved {
    /// A regular file, or none yet: replaced through a temporary file beside it.
    Replace(PathBuf),
    /// Opened (or duplicated) for writing, to be written straight through.
    Through(File),
}

fn cannot(path: &Path, e: &io::Error) -> CliError {
    CliError::failed(format!(
        "cannot write `{}`: {}",
        path.display(),
        crate::input::io_reason(e)
    ))
}

/// What `given` is, its symbolic links followed one by one: a descriptor of this process
/// (`/dev/stdout` → `/proc/self/fd/1`) is duplicated, not followed to the file it has open
/// (renaming over that file would cut it off from the descriptor).
fn resolve(given: &Path) -> Result<Resolved, CliError> {
    let mut path = given.to_path_buf();
    for _ in 0..=MAX_LINKS {
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Resolved::Replace(path)),
            Err(e) => return Err(cannot(given, &e)),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            if let Some(through) = descriptor::open(&path) {
                return through.map(Resolved::Through).map_err(|e| cannot(given, &e));
            }
            let to = fs::read_link(&path).map_err(|e| cannot(given, &e))?;
            // A relative target is read from the link's directory (`join` keeps an absolute one).
            path = match path.parent() {
                Some(dir) => dir.join(to),
                None => to,
            };
            continue;
        }
        if kind.is_dir() {
            let hint = if path == given {
                String::new()
            } else {
                format!(" (it leads to `{}`)", path.display())
            };
            return Err(CliError::usage(format!(
                "`--output-file {}` is a directory{hint}; name a file, in it or elsewhere",
                given.display()
            )));
        }
        if kind.is_file() {
            return Ok(Resolved::Replace(path));
        }
        // A character or block device, a FIFO, a socket: what a shell's `>` would open.
        return fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map(Resolved::Through)
            .map_err(|e| cannot(given, &e));
    }
    Err(CliError::failed(format!(
        "cannot write `{}`: more than {MAX_LINKS} symbolic links in a row",
        given.display()
    )))
}

impl OutputFile {
    pub fn create(path: &Path) -> Result<OutputFile, CliError> {
        if path.file_name().is_none() {
            return Err(CliError::usage(format!(
                "`--output-file {}` names no file",
                path.display()
            )));
        }
        let sink = match resolve(path)? {
            Resolved::Through(file) => Sink::Through(BufWriter::with_capacity(1 << 16, file)),
            Resolved::Replace(target) => {
                if target.file_name().is_none() {
                    return Err(CliError::usage(format!(
                        "`--output-file {}` names no file (it leads to `{}`)",
                        path.display(),
                        target.display()
                    )));
                }
                let tmp = WholeFile::create(&target, Mode::New).map_err(|e| cannot(path, &e))?;
                let armed = on_signal::arm(tmp.path());
                Sink::Replace {
                    file: BufWriter::with_capacity(1 << 16, tmp),
                    _armed: armed,
                }
            }
        };
        Ok(OutputFile {
            out: Checked::new(sink, format!("`{}`", path.display())),
            shown: path.to_path_buf(),
            written: 0,
        })
    }

    /// Replace: flushes, syncs and renames the temporary file over the target. Through:
    /// flushes what is left (a reader that went away, `EPIPE`, is not an error, as for stdout).
    pub fn commit(self) -> anyhow::Result<()> {
        let OutputFile { out, shown, .. } = self;
        match out.into_inner() {
            Sink::Replace { file, _armed } => {
                let tmp = file.into_inner().map_err(|e| cannot(&shown, e.error()))?;
                tmp.commit().map_err(|e| cannot(&shown, &e))?;
                drop(_armed);
            }
            Sink::Through(mut file) => match file.flush() {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(cannot(&shown, &e).into()),
                _ => {}
            },
        }
        Ok(())
    }

    /// No result: the temporary file is removed (by the drop); what went straight through
    /// is flushed, as a failed command's stdout is.
    fn abandon(self) {
        if let Sink::Through(mut file) = self.out.into_inner() {
            let _ = file.flush();
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Replace { file, .. } => file.write(buf),
            Sink::Through(file) => file.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Replace { file, .. } => file.flush(),
            Sink::Through(file) => file.flush(),
        }
    }
}

/// A symbolic link that names a descriptor of this process: one in `/proc/<this pid>/fd`
/// (`/proc/self/fd/N`, `/dev/fd/N`, `/dev/stdout`'s target), or in one of its threads'
/// `task/<tid>/fd`. Such a descriptor is duplicated, so the output goes where the
/// descriptor writes (a pipe, a terminal, a file at its offset); a descriptor of another
/// process is opened for writing. `None`: an ordinary link, to be followed.
#[cfg(target_os = "linux")]
mod descriptor {
    use std::fs::File;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::path::Path;

    pub fn open(link: &Path) -> Option<std::io::Result<File>> {
        let (pid, fd) = crate::input::proc_descriptor(link)?;
        if pid != std::process::id() {
            return Some(std::fs::OpenOptions::new().write(true).open(link));
        }
        // SAFETY: F_DUPFD_CLOEXEC on any number is safe: -1 (EBADF) when it is not open.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if dup < 0 {
            return Some(Err(std::io::Error::last_os_error()));
        }
        // SAFETY: `dup` is a new descriptor that nothing else owns.
        Some(Ok(File::from(unsafe { OwnedFd::from_raw_fd(dup) })))
    }
}

#[cfg(not(target_os = "linux"))]
mod descriptor {
    pub fn open(_: &std::path::Path) -> Option<std::io::Result<std::fs::File>> {
        None
    }
}
