//! Upstream's own Python client (PyPI `armada-client==0.5.1`: `armada_client.armada.submit_pb2`,
//! `submit_pb2_grpc`) for the tests that need a real peer or bytes written by upstream's
//! generated classes.
//!
//! The interpreter is `$RETRYCTL_TEST_PYTHON` when set (only that one), else the virtualenv
//! `test-venv` in the target directory, which the first test that needs it makes when it
//! is not there: `python3 -m venv`, then pip installs the pinned package. Racing test threads
//! wait for one another (a `OnceLock`); racing test processes, and `scripts/test-venv.sh`
//! (what `.ci/run` runs first, the same steps), take the lock file `test-venv.lock` beside it
//! and build in a directory of their own that is renamed to `test-venv` only when finished,
//! so a half-made virtualenv is never used. Without `python3`, or when the virtualenv cannot
//! be made (no network to PyPI), the tests return early and are named at the end of the run
//! ([`super::Missing`]); under `CI=true` they fail instead.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::Missing;

/// The packages, pinned: upstream's client, PyYAML, a YAML 1.1 reader (as go-yaml, the
/// reader of kubectl, armadactl and the executor's config), and `jsonschema`, the reference
/// JSON Schema validator (support/json_schema.rs).
pub const PACKAGES: [&str; 3] = ["armada-client==0.5.1", "PyYAML==6.0.2", "jsonschema==4.23.0"];

/// What a working interpreter imports.
const IMPORT: &str = "import armada_client.armada.submit_pb2_grpc, yaml, jsonschema";

/// The Python interpreter with `armada_client` importable, or `None` (the calling test is
/// named at the end of the run).
pub fn python() -> Option<PathBuf> {
    static FOUND: OnceLock<Result<PathBuf, Missing>> = OnceLock::new();
    match FOUND.get_or_init(find) {
        Ok(python) => Some(python.clone()),
        Err(missing) => {
            missing.skip();
            None
        }
    }
}

fn imports(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", IMPORT])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn find() -> Result<PathBuf, Missing> {
    if let Some(given) = std::env::var_os("RETRYCTL_TEST_PYTHON").map(PathBuf::from) {
        return if imports(&given) {
            Ok(given)
        } else {
            Err(Missing {
                what: format!(
                    "upstream's Python client not found (`$RETRYCTL_TEST_PYTHON`, {}, cannot import armada_client)",
                    given.display()
                ),
                install: format!(
                    "{} -m pip install {}",
                    given.display(),
                    PACKAGES.map(|p| format!("'{p}'")).join(" ")
                ),
            })
        };
    }
    let venv = super::target_dir().join("test-venv");
    let python = venv.join("bin/python3");
    if imports(&python) {
        return Ok(python);
    }
    make_venv(&venv)?;
    Ok(python)
}

/// Makes the virtualenv at `venv` unless another process made it first (see the module doc).
fn make_venv(venv: &Path) -> Result<(), Missing> {
    let no_python = || Missing {
        what: format!(
            "Python 3 not found (no `python3` on PATH) to make the virtualenv of upstream's Python client (PyPI `{}`)",
            PACKAGES.join("`, `")
        ),
        install: "apt-get install -y python3 python3-venv".to_string(),
    };
    if !Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Err(no_python());
    }
    let parent = venv.parent().expect("the venv has a parent");
    std::fs::create_dir_all(parent).expect("the target directory can be made");
    let _lock = Lock::take(&parent.join("test-venv.lock"));
    if imports(&venv.join("bin/python3")) {
        return Ok(());
    }
    let failed = |step: &str, out: &std::process::Output, install: &str| Missing {
        what: format!(
            "upstream's Python client could not be installed ({step} failed: {})",
            last_line(&out.stderr)
        ),
        install: install.to_string(),
    };
    let building = parent.join(format!("test-venv.tmp.{}", std::process::id()));
    // Left by a process that was killed while building (none builds now: the lock is ours).
    for stale in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        if stale.file_name().to_string_lossy().starts_with("test-venv.tmp.") {
            let _ = std::fs::remove_dir_all(stale.path());
        }
    }
    let out = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&building)
        .output()
        .map_err(|_| no_python())?;
    if !out.status.success() {
        return Err(failed("`python3 -m venv`", &out, "apt-get install -y python3-venv"));
    }
    let out = Command::new(building.join("bin/python3"))
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(PACKAGES)
        .output()
        .expect("the new virtualenv's python runs");
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&building);
        // Most often PyPI out of reach; the script retries the same steps.
        return Err(failed(
            &format!("`pip install {}`", PACKAGES.join(" ")),
            &out,
            "scripts/test-venv.sh",
        ));
    }
    // A virtualenv made before that cannot import the package (broken, or an older pin).
    let _ = std::fs::remove_dir_all(venv);
    std::fs::rename(&building, venv).expect("the finished virtualenv is renamed into place");
    if !imports(&venv.join("bin/python3")) {
        return Err(Missing {
            what: format!(
                "upstream's Python client was installed in {} but does not import",
                venv.display()
            ),
            install: "scripts/test-venv.sh".to_string(),
        });
    }
    Ok(())
}

fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_string()
}

/// An exclusive `flock(2)` on a file, released when dropped (or when the process ends).
struct Lock(std::fs::File);

impl Lock {
    fn take(path: &Path) -> Lock {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // SAFETY: flock(2) on a descriptor this `File` owns; no memory is involved.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(
                e.kind(),
                std::io::ErrorKind::Interrupted,
                "flock {}: {e}",
                path.display()
            );
        }
        Lock(file)
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as in `take`.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Runs `script` (Python source) with `python`, `args` after it; its stdout, or a panic with
/// everything it printed when it fails.
pub fn run(python: &std::path::Path, script: &str, args: &[&str]) -> String {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "python failed: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The in-memory Armada test double (`armada_double.py`: upstream's generated servicers) on
/// 127.0.0.1; stopped when dropped (its stdin closes, and it is killed).
pub struct Double {
    child: std::process::Child,
    pub port: u16,
}

impl Double {
    pub fn start(python: &std::path::Path, args: &[&str]) -> Double {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut child = Command::new(python)
            .arg(super::root().join("tests/integration/support/armada_double.py"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the double starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the double did not say its port: {line:?}"));
        Double { child, port }
    }
}

impl Drop for Double {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
