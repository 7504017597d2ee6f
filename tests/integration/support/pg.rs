//! A real, throwaway PostgreSQL for the history-import tests: one cluster per test binary
//! run, a fresh database per test, the schema built from Lookout's own migrations
//! (`contract/lookout/migrations/*.sql`, vendored, applied in name order, each file as one
//! simple query outside a transaction, as upstream applies them).
//!
//! - Binaries: in `$RETRYCTL_TEST_PG_BIN` when set (only there: point it at an empty
//!   directory to see the tests go without), else `initdb` on PATH, else
//!   `/usr/lib/postgresql/*/bin` (Debian's package). When there are none the tests return
//!   early and are named on stderr at the end of the run ([`super::Missing`]); under
//!   `CI=true` they fail instead (`.ci/run` installs the package).
//! - initdb refuses root: as root the cluster runs as user `postgres` (else `nobody`)
//!   through `runuser`, in a temp dir chowned to that user.
//! - Stopped at the end: the server runs under a `sh` that waits on its stdin, a pipe held by
//!   this process; when the test binary exits the pipe closes, and the shell stops the server
//!   (fast shutdown) and removes the data directory. No server outlives the tests.
//! - Small on disk: a test's database is dropped with its [`Db`], and the write-ahead log is
//!   held to 64 MB (`max_wal_size`) rather than PostgreSQL's 1 GB.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::Missing;

pub const USER: &str = "lookout";
pub const PASSWORD: &str = "s3cret";

pub struct Cluster {
    pub port: u16,
    /// Keeps the shell's stdin open; dropped never (static), closed when the process exits.
    _guard: Mutex<Child>,
}

static CLUSTER: OnceLock<Result<Cluster, Missing>> = OnceLock::new();
static NEXT_DB: AtomicUsize = AtomicUsize::new(0);

/// Lookout's migrations, vendored in the repository (contract/README.md).
pub fn migrations_dir() -> PathBuf {
    super::root().join("contract/lookout/migrations")
}

fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("RETRYCTL_TEST_PG_BIN") {
        let dir = PathBuf::from(dir);
        return (dir.join("initdb").is_file() && dir.join("postgres").is_file()).then_some(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn run_as_user() -> Option<&'static str> {
    if !is_root() {
        return None;
    }
    let exists = |u: &str| Command::new("id").arg(u).output().is_ok_and(|o| o.status.success());
    Some(if exists("postgres") { "postgres" } else { "nobody" })
}

fn command(user: Option<&str>, program: &Path) -> Command {
    match user {
        Some(u) => {
            let mut c = Command::new("runuser");
            c.args(["-u", u, "--"]).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// A free port on 127.0.0.1 (bound and released: a server started right after gets it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start() -> Result<Cluster, Missing> {
    let Some(bin) = bin_dir() else {
        let where_ = match std::env::var_os("RETRYCTL_TEST_PG_BIN") {
            Some(dir) => format!("in `$RETRYCTL_TEST_PG_BIN` ({})", Path::new(&dir).display()),
            None => "on PATH or in /usr/lib/postgresql/*/bin".to_string(),
        };
        return Err(Missing {
            what: format!("PostgreSQL not found (no `initdb` and `postgres` {where_})"),
            install: "apt-get install -y postgresql".to_string(),
        });
    };
    let user = run_as_user();
    let dir = tempfile::Builder::new()
        .prefix("retryctl-pg-")
        .tempdir()
        .unwrap()
        .keep();
    let data = dir.join("data");
    let pwfile = dir.join("pw");
    std::fs::write(&pwfile, PASSWORD).unwrap();
    if let Some(u) = user {
        let st = Command::new("chown").args(["-R", u]).arg(&dir).status().unwrap();
        assert!(st.success(), "chown {} to {u}", dir.display());
    }
    let out = command(user, &bin.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            USER,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ])
        .arg(format!("--pwfile={}", pwfile.display()))
        .output()
        .expect("initdb runs");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    // The shell starts the server, waits for its stdin (our pipe) to close, then stops it
    // and removes the cluster.
    let script = format!(
        "'{pg}' -D '{data}' -p {port} -k '{dir}' -c listen_addresses=127.0.0.1 -c fsync=off \
         -c synchronous_commit=off -c full_page_writes=off -c max_wal_size=64MB \
         -c min_wal_size=32MB >'{dir}/log' 2>&1 & pid=$!; \
         cat >/dev/null; kill -INT $pid; wait $pid; rm -rf '{dir}'",
        pg = bin.join("postgres").display(),
        data = data.display(),
        dir = dir.display(),
    );
    let mut sh = command(user, Path::new("/bin/sh"));
    sh.args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = sh.spawn().expect("postgres starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if connect(port, "postgres").is_ok() {
            break;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
            panic!("postgres did not start on port {port} within 60s:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    build_template(port);
    Ok(Cluster {
        port,
        _guard: Mutex::new(child),
    })
}

pub fn admin_dsn(port: u16, db: &str) -> String {
    format!("postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/{db}")
}

/// A client of database `db` of the shared cluster, as its owner.
fn connect(port: u16, db: &str) -> Result<postgres::Client, postgres::Error> {
    postgres::Client::connect(&admin_dsn(port, db), postgres::NoTls)
}

/// Database `lookout_template`, built once from the migrations; each test copies it.
fn build_template(port: u16) {
    let mut admin = connect(port, "postgres").unwrap();
    admin.batch_execute("CREATE DATABASE lookout_template").unwrap();
    let mut db = connect(port, "lookout_template").unwrap();
    migrate(&mut db);
}

/// Lookout's migrations, applied to `db` as upstream applies them.
fn migrate(db: &mut postgres::Client) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(migrations_dir())
        .unwrap_or_else(|e| panic!("{}: {e}", migrations_dir().display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 35,
        "expected Lookout's migrations, found {}",
        files.len()
    );
    for f in files {
        let sql = std::fs::read_to_string(&f).unwrap();
        // One simple query per file: outside an explicit transaction, so the single-statement
        // `CREATE INDEX CONCURRENTLY` files run as they do upstream.
        db.batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
}

/// The shared cluster, or `None` (the calling test is named at the end of the run) when
/// PostgreSQL is not installed.
pub fn cluster() -> Option<&'static Cluster> {
    match CLUSTER.get_or_init(start) {
        Ok(cluster) => Some(cluster),
        Err(missing) => {
            missing.skip();
            None
        }
    }
}

/// A fresh Lookout database (a copy of the migrated template): its DSN and a client.
pub struct Db {
    pub dsn: String,
    pub name: String,
    pub client: postgres::Client,
    pub port: u16,
}

pub fn lookout_db(test: &str) -> Option<Db> {
    create_db(test, "TEMPLATE lookout_template")
}

/// A new database of the shared cluster named after `test`, made by `CREATE DATABASE name
/// {how}`; its DSN and a client.
fn create_db(test: &str, how: &str) -> Option<Db> {
    let c = cluster()?;
    let name = format!("{test}_{}", NEXT_DB.fetch_add(1, Ordering::SeqCst));
    connect(c.port, "postgres")
        .unwrap()
        .batch_execute(&format!("CREATE DATABASE {name} {how}"))
        .unwrap();
    Some(Db {
        dsn: admin_dsn(c.port, &name),
        client: connect(c.port, &name).unwrap(),
        name,
        port: c.port,
    })
}

/// A fresh Lookout database in `encoding` (`SQL_ASCII`: a database that keeps whatever bytes
/// it is given, as some old Lookout installs are), built from the migrations (the template is
/// UTF8, and a copy keeps its template's encoding); its DSN and a client. The client's own
/// encoding is the database's, so that a test can write bytes that are not UTF-8 (`E'\xff'`).
pub fn lookout_db_encoded(test: &str, encoding: &str) -> Option<Db> {
    let mut db = create_db(
        test,
        &format!("TEMPLATE template0 ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C'"),
    )?;
    db.client
        .batch_execute(&format!("SET client_encoding = '{encoding}'"))
        .unwrap();
    migrate(&mut db.client);
    Some(db)
}

/// A database with no Lookout tables at all.
pub fn empty_db(test: &str) -> Option<Db> {
    create_db(test, "")
}

/// zlib, as Lookout's ingester compresses `job_run.error`.
pub fn zlib(text: &str) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// The week the fixture `testdata/lookout/lookout.sql` covers, as `history`'s flags.
pub const WINDOW: [&str; 4] = ["--from", "2026-11-15T00:00:00Z", "--to", "2026-11-22T00:00:00Z"];

/// A Lookout database holding the fixture `testdata/lookout/lookout.sql`.
pub fn fixture_db(test: &str) -> Option<Db> {
    let mut db = lookout_db(test)?;
    let sql = std::fs::read_to_string(crate::support::root().join("testdata/lookout/lookout.sql")).unwrap();
    db.client.batch_execute(&sql).unwrap();
    Some(db)
}

/// `history` of queue `ml` over [`WINDOW`] to `HOME/week.jsonl` (exit 0, nothing on stdout);
/// its stderr (the left-out rows and the summary).
pub fn export_week(home: &Path, db: &Db) -> (PathBuf, String) {
    let file = home.join("week.jsonl");
    let out = crate::support::retryctl(home)
        .args(["history", "--queue", "ml", "--lookout-db", &db.dsn, "--output-file"])
        .arg(&file)
        .args(WINDOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    assert!(out.stdout.is_empty());
    (file, String::from_utf8(out.stderr).unwrap())
}

/// A test's database goes with the test: kept to the end, the 85 or so a run makes held
/// 1.5 GB of /tmp (and their write-ahead log 1 GB more) by the last test.
impl Drop for Db {
    fn drop(&mut self) {
        // FORCE: the test's own client, and any retryctl still connected, are let go.
        let dropped = connect(self.port, "postgres")
            .and_then(|mut admin| admin.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)));
        if let Err(e) = dropped {
            eprintln!("note: test database `{}` left in place: {e}", self.name);
        }
    }
}

impl Db {
    /// The DSN as retryctl shows it, its password masked.
    pub fn masked(&self) -> String {
        self.dsn.replace(PASSWORD, "***")
    }
}

/// A PostgreSQL cluster of one test's own, which the test stops and starts again (the
/// shared one serves every other test): a database `lookout` built from the migrations, on a
/// port that stays the same across restarts. Stopped and removed when dropped.
pub struct OwnCluster {
    pub dsn: String,
    pub port: u16,
    bin: PathBuf,
    dir: PathBuf,
    user: Option<&'static str>,
}

impl OwnCluster {
    /// `None` (the test named at the end of the run) when PostgreSQL is not installed.
    pub fn start() -> Option<OwnCluster> {
        let Some(bin) = bin_dir() else {
            // The shared cluster's start says what is missing, once.
            cluster();
            return None;
        };
        let user = run_as_user();
        let dir = tempfile::Builder::new()
            .prefix("retryctl-own-pg-")
            .tempdir()
            .unwrap()
            .keep();
        if let Some(u) = user {
            let st = Command::new("chown").args(["-R", u]).arg(&dir).status().unwrap();
            assert!(st.success(), "chown {} to {u}", dir.display());
        }
        let out = command(user, &bin.join("initdb"))
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-U", USER, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
            .output()
            .expect("initdb runs");
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let port = free_port();
        let c = OwnCluster {
            dsn: format!("postgresql://{USER}@127.0.0.1:{port}/lookout"),
            port,
            bin,
            dir,
            user,
        };
        c.up();
        let admin_dsn = format!("postgresql://{USER}@127.0.0.1:{port}/postgres");
        let mut admin = postgres::Client::connect(&admin_dsn, postgres::NoTls).unwrap();
        admin.batch_execute("CREATE DATABASE lookout").unwrap();
        let mut db = c.client();
        let mut files: Vec<PathBuf> = std::fs::read_dir(migrations_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            .collect();
        files.sort();
        for f in files {
            db.batch_execute(&std::fs::read_to_string(&f).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        }
        Some(c)
    }

    fn pg_ctl(&self, args: &[&str]) {
        let out = command(self.user, &self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(args)
            .output()
            .expect("pg_ctl runs");
        assert!(
            out.status.success(),
            "pg_ctl {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server (again) on its port, and waits (60 s at most) until it answers.
    pub fn up(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log");
        self.pg_ctl(&["-w", "-t", "60", "-l", log.to_str().unwrap(), "-o", &opts, "start"]);
    }

    /// Stops the server at once (`-m immediate`: its connections are cut, as a crash would).
    pub fn down(&self) {
        self.pg_ctl(&["-w", "-t", "60", "-m", "immediate", "stop"]);
    }

    /// A client of database `lookout`.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.dsn, postgres::NoTls).unwrap()
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = command(self.user, &self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `n` jobs `j000001`… of queue `q`, submitted a second apart from 2026-11-16, each of 3 runs
/// (two exits 137, then a success), ended.
pub fn numbered_jobs(client: &mut postgres::Client, n: u32) {
    client
        .batch_execute(&format!(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, annotations)
             SELECT format('j%s', lpad(i::text, 6, '0')), 'q', 'o', 's', 1, 1024, 0, 0, 1, timestamp '2026-11-16' + i * interval '1 second', 4, now(), 0, '{{}}'::jsonb
               FROM generate_series(1, {n}) i;
             INSERT INTO job_run (run_id, job_id, cluster, node, leased, started, finished, job_run_state, exit_code)
             SELECT format('r%s-%s', i, k), format('j%s', lpad(i::text, 6, '0')), 'c', 'n', timestamp '2026-11-16' + (i * 10 + k) * interval '1 second',
                    timestamp '2026-11-16' + (i * 10 + k) * interval '1 second', timestamp '2026-11-16' + (i * 10 + k + 1) * interval '1 second',
                    CASE WHEN k = 2 THEN 3 ELSE 4 END, CASE WHEN k = 2 THEN 0 ELSE 137 END
               FROM generate_series(1, {n}) i, generate_series(0, 2) k;"
        ))
        .unwrap();
}
