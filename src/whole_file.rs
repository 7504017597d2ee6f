//! A file written whole or not at all: the one way retryctl replaces a file it writes
//! (`--output-file`, `watch --state`, the armadactl config's `currentContext`).
//!
//! The bytes go to a fresh temporary file beside the target (created with `O_EXCL` under a
//! random name, so never through a symbolic link planted there, and never one another
//! process is writing), flushed to the disk, renamed over the target, and the directory
//! flushed so that the rename survives a power cut. Dropped before [`WholeFile::commit`], the
//! temporary file is removed and the target is left as it was.
//!
//! Owns: [`WholeFile`] and [`write_whole`]. Must not: decide what a target is (a link
//! followed, a device written through: the caller resolves it), or word an error for people.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The permissions the new file gets.
#[derive(Debug, Clone)]
pub enum Mode {
    /// What `File::create` gives a new file: 0666 less the umask (the result is read by the
    /// next step, maybe as another user of the volume).
    New,
    /// Exactly these (a file that holds passwords keeps its 0600).
    As(std::fs::Permissions),
}

/// A file on its way to replacing `target`.
pub struct WholeFile {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
}

impl WholeFile {
    /// A fresh temporary file beside `target` (in its directory, named `.NAME.XXXXXX.tmp`).
    pub fn create(target: &Path, mode: Mode) -> io::Result<WholeFile> {
        let dir = directory_of(target);
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(target.file_name().unwrap_or_default());
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        if let Mode::New = mode {
            builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        }
        let tmp = builder.tempfile_in(dir)?;
        if let Mode::As(p) = mode {
            tmp.as_file().set_permissions(p)?;
        }
        Ok(WholeFile {
            tmp,
            target: target.to_path_buf(),
        })
    }

    /// The temporary file's path (for a signal handler that removes it).
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Flushes the bytes to the disk, renames the file over the target and flushes the
    /// directory.
    pub fn commit(self) -> io::Result<()> {
        self.tmp.as_file().sync_all()?;
        let dir = directory_of(&self.target).to_path_buf();
        self.tmp.persist(&self.target).map_err(|e| e.error)?;
        // Not every file system lets a directory be opened or flushed: the rename is done.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Write for WholeFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

/// `bytes` as the file `target`, whole or not at all.
pub fn write_whole(target: &Path, bytes: &[u8], mode: Mode) -> io::Result<()> {
    let mut f = WholeFile::create(target, mode)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Writes `target` whole with what `write` writes, through a buffer (a document written as
/// it is made, never held whole in memory).
pub fn write_whole_with(
    target: &Path,
    mode: Mode,
    write: impl FnOnce(&mut io::BufWriter<&mut WholeFile>) -> io::Result<()>,
) -> io::Result<()> {
    let mut f = WholeFile::create(target, mode)?;
    let mut out = io::BufWriter::with_capacity(64 * 1024, &mut f);
    write(&mut out)?;
    out.flush()?;
    drop(out);
    f.commit()
}

fn directory_of(target: &Path) -> &Path {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn a_file_is_replaced_whole_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_whole(&path, b"one", Mode::New).unwrap();
        write_whole(&path, b"two", Mode::New).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["s.json"]);
    }

    #[test]
    fn dropped_uncommitted_it_leaves_the_target_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_whole(&path, b"kept", Mode::New).unwrap();
        let mut f = WholeFile::create(&path, Mode::New).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        assert_eq!(names(dir.path()), ["s.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_where_a_temporary_file_was_is_never_written_through() {
        // The old fixed name `.s.json.tmp`, planted as a link to a file of someone else's.
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"untouched").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(".s.json.tmp")).unwrap();
        write_whole(&dir.path().join("s.json"), b"state", Mode::New).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
        assert_eq!(std::fs::read(dir.path().join("s.json")).unwrap(), b"state");
    }

    #[cfg(unix)]
    #[test]
    fn the_permissions_asked_are_the_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        write_whole(&path, b"x", Mode::As(std::fs::Permissions::from_mode(0o600))).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
