//! TLS end to end (docs/serve.md, docs/cli.md): `retryctl serve --tls-cert/--tls-key` as a real
//! process, the CLI against it with `--certificate-authority`, a config context's
//! `certificateAuthority` or `--insecure-skip-tls-verify`, the wrong-scheme and bad-certificate
//! errors, and the header read timeout and handshake bound (docs/serve.md). The certificate is
//! self-signed for 127.0.0.1 and localhost, made here with rcgen.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use retryctl::server::{Config, Location, TlsFiles};

use crate::serve_process::spawn;
use crate::support::server::TestServer;
use crate::support::{format_output, retryctl, temp_home};

const POLICY: &str = "testdata/policies/valid/infra.yaml";

/// A directory with `cert.pem`, `key.pem` (self-signed for 127.0.0.1 and localhost) and a
/// `tokens` file holding `tok-1`.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        std::fs::write(dir.path().join("cert.pem"), made.cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), made.key_pair.serialize_pem()).unwrap();
        std::fs::write(dir.path().join("tokens"), "tok-1\n").unwrap();
        Pki { dir }
    }

    /// Like [`Pki::new`], but the certificate is marked as a CA (`CA:TRUE`), as
    /// `openssl req -x509` makes a self-signed certificate by default, and names `localhost`
    /// only.
    fn new_ca_flagged() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        std::fs::write(dir.path().join("tokens"), "tok-1\n").unwrap();
        Pki { dir }
    }

    /// A private CA named `ca_name` (`ca.pem`) and a server certificate it signed for
    /// 127.0.0.1 and localhost (`cert.pem`, `key.pem`), as a company's own CA issues them.
    fn new_private_ca(ca_name: &str) -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, ca_name);
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        std::fs::write(dir.path().join("tokens"), "tok-1\n").unwrap();
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// `retryctl serve` over TLS, in memory, requiring the token.
    fn serve(&self) -> crate::serve_process::Proc {
        spawn(&[
            "--listen",
            "127.0.0.1:0",
            "--in-memory",
            "--tls-cert",
            &self.arg("cert.pem"),
            "--tls-key",
            &self.arg("key.pem"),
            "--token-file",
            &self.arg("tokens"),
        ])
    }

    fn files(&self) -> TlsFiles {
        TlsFiles {
            cert: self.path("cert.pem"),
            key: self.path("key.pem"),
        }
    }

    /// A test client that trusts the certificate.
    fn client(&self) -> reqwest::blocking::Client {
        let pem = std::fs::read(self.path("cert.pem")).unwrap();
        reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap()
    }
}

/// Runs `retryctl ARGS` with its own home; the exchange with `url` replaced by `URL` and
/// `dir` by `DIR`.
fn run(home: &Path, env: &[(&str, &str)], args: &[&str], url: &str, dir: &Path) -> String {
    let mut cmd = retryctl(home);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    format_output(&out)
        .replace(url, "URL")
        .replace(&dir.display().to_string(), "DIR")
}

/// `--armada-url URL` (and `--certificate-authority CA`) before `rest`.
fn at<'a>(url: &'a str, ca: Option<&'a str>, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--armada-url", url];
    if let Some(ca) = ca {
        args.extend(["--certificate-authority", ca]);
    }
    args.extend_from_slice(rest);
    args
}

/// The exchange of a command refused because the server's certificate does not verify:
/// exit 4, what failed, why, and the hint.
fn unverified(what: &str, why: &str) -> String {
    format!(
        "exit: 4\n--- stdout\n--- stderr\nerror: {what}: the TLS certificate of the server at `URL` does not verify: {why}\n\nhint: if the server's certificate comes from a private CA or is self-signed, trust it with `--certificate-authority FILE` or the config context key `certificateAuthority`\n"
    )
}

fn port_of(url: &str) -> &str {
    url.rsplit(':').next().unwrap()
}

/// (a) The acceptance case: a TLS server requiring a token; the CLI with the CA and the token
/// creates and reads a policy, by flag and by config context.
#[test]
fn create_and_get_over_tls_with_the_ca_by_flag_and_by_context() {
    let pki = Pki::new();
    let p = pki.serve();
    assert_eq!(
        p.first_line,
        format!(
            "retryctl serve: listening on https://127.0.0.1:{} (database: in memory)",
            port_of(&p.url)
        )
    );
    let home = temp_home();
    let (url, dir) = (p.url.as_str(), pki.dir.path());
    let ca = pki.arg("cert.pem");
    let token = [("ARMADA_TOKEN", "tok-1")];
    assert_eq!(
        run(
            home.path(),
            &token,
            &at(url, Some(ca.as_str()), &["create", "-f", POLICY]),
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra created\n--- stderr\n"
    );
    assert_eq!(
        run(
            home.path(),
            &token,
            &at(url, Some(ca.as_str()), &["get", "rp", "infra", "-o", "name"]),
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra\n--- stderr\n"
    );
    // The same through a config context: `certificateAuthority` relative to the file.
    let config = pki.path("armadactl.yaml");
    std::fs::write(
        &config,
        format!(
            "currentContext: tls\ncontexts:\n  tls:\n    armadaRestUrl: {url}\n    certificateAuthority: cert.pem\n    bearerToken: tok-1\n"
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    assert_eq!(
        run(
            home.path(),
            &[],
            &["--config", &config, "get", "rp", "infra", "-o", "name"],
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra\n--- stderr\n"
    );
    // (b) Without the token: 401, exit 5; anonymous writes are refused over TLS too.
    assert_eq!(
        run(
            home.path(),
            &[],
            &at(url, Some(ca.as_str()), &["create", "-f", POLICY]),
            url,
            dir
        ),
        "exit: 5\n--- stdout\n--- stderr\nerror: testdata/policies/valid/infra.yaml: cannot create retry policy `infra`: the server answered 401 Unauthorized (Unauthenticated): request could not be authenticated: no credentials presented; this server requires a bearer token\n\nhint: give credentials: `--token`, `--token-file` or `$ARMADA_TOKEN`, or the config context's `bearerToken`, `basicAuth` or `execAuth`\n"
    );
    let (code, lines) = p.terminate();
    assert_eq!(code, Some(0));
    // The request log works over TLS: the requests above, then the goodbye.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("retryctl serve: POST /v1/retry-policy 200 ")),
        "{lines:?}"
    );
    assert_eq!(lines.last().unwrap(), "retryctl serve: stopped; database closed");
}

/// (c) No CA: the certificate does not verify (exit 4), named with the URL and the reason,
/// and the hint names both ways to trust it. (d) `--insecure-skip-tls-verify` connects, with a
/// warning on stderr.
#[test]
fn an_untrusted_certificate_is_exit_4_and_skip_verify_warns() {
    let pki = Pki::new();
    let p = pki.serve();
    let home = temp_home();
    let (url, dir) = (p.url.as_str(), pki.dir.path());
    let token = [("ARMADA_TOKEN", "tok-1")];
    assert_eq!(
        run(home.path(), &token, &at(url, None, &["get", "rp"]), url, dir),
        unverified(
            "cannot list retry policies",
            "it is not signed by a certificate authority retryctl trusts (unknown issuer)"
        )
    );
    assert_eq!(
        run(
            home.path(),
            &token,
            &at(url, None, &["--insecure-skip-tls-verify", "create", "-f", POLICY]),
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra created\n--- stderr\nwarning: TLS certificate verification is off (`--insecure-skip-tls-verify`): anyone on the network path can read and change this connection, credentials included\n"
    );
    // From a context as well, naming it.
    let config = pki.path("armadactl.yaml");
    std::fs::write(
        &config,
        format!("currentContext: lab\ncontexts:\n  lab:\n    armadaRestUrl: {url}\n    insecureSkipTlsVerify: true\n"),
    )
    .unwrap();
    assert_eq!(
        run(
            home.path(),
            &token,
            &["--config", &config.display().to_string(), "get", "rp", "-o", "name"],
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra\n--- stderr\nwarning: TLS certificate verification is off (`insecureSkipTlsVerify` of context `lab`): anyone on the network path can read and change this connection, credentials included\n"
    );
    // Both at once contradict each other.
    assert_eq!(
        run(
            home.path(),
            &token,
            &at(url, None, &["--insecure-skip-tls-verify", "--certificate-authority", &pki.arg("cert.pem"), "get", "rp"]),
            url,
            dir
        ),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--certificate-authority` and `--insecure-skip-tls-verify` contradict each other: one trusts a CA, the other any certificate\n"
    );
}

/// (e) `http://` to the TLS port, (f) `https://` to a plain port: exit 4, saying which URL
/// to use.
#[test]
fn the_wrong_scheme_is_exit_4_naming_the_right_url() {
    let pki = Pki::new();
    let p = pki.serve();
    let home = temp_home();
    let dir = pki.dir.path();
    let plain_url = p.url.replacen("https://", "http://", 1);
    assert_eq!(
        run(home.path(), &[], &at(&plain_url, None, &["get", "rp"]), &p.url, dir)
            .replace(&plain_url, "PLAIN"),
        "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: the server at `PLAIN` speaks TLS: use `URL`\n"
    );
    // What a browser or curl sees on the TLS port: Go's words, in plain HTTP.
    let addr = p.url.trim_start_matches("https://");
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(raw, "GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    raw.read_to_string(&mut answer).unwrap();
    assert_eq!(
        answer,
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 48\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    // The server is still serving TLS.
    let health = pki.client().get(format!("{}/health", p.url)).send().unwrap();
    assert_eq!(health.status().as_u16(), 200);

    let plain = spawn(&["--listen", "127.0.0.1:0", "--in-memory"]);
    let tls_url = plain.url.replacen("http://", "https://", 1);
    assert_eq!(
        run(home.path(), &[], &at(&tls_url, None, &["get", "rp"]), &plain.url, dir)
            .replace(&tls_url, "TLS"),
        "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: the server at `TLS` does not speak TLS: use `URL`\n"
    );
}

/// (g) Flags: one TLS flag without the other is a usage error (2); a certificate or key
/// file that is missing or not PEM is refused at start naming it (3); so is a CA file.
#[test]
fn tls_flags_and_bad_files() {
    let pki = Pki::new();
    let home = temp_home();
    let dir = pki.dir.path();
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--in-memory"];
        args.extend_from_slice(extra);
        run(home.path(), &[], &args, "URL", dir)
    };
    let cert = pki.arg("cert.pem");
    let key = pki.arg("key.pem");
    let out = serve(&["--tls-cert", &cert]);
    assert!(out.starts_with("exit: 2\n--- stdout\n--- stderr\nerror: the following required arguments were not provided:\n  --tls-key <FILE>\n"), "{out}");
    let out = serve(&["--tls-key", &key]);
    assert!(out.starts_with("exit: 2\n--- stdout\n--- stderr\nerror: the following required arguments were not provided:\n  --tls-cert <FILE>\n"), "{out}");
    let missing = pki.arg("missing.pem");
    assert_eq!(
        serve(&["--tls-cert", &missing, "--tls-key", &key]),
        "exit: 3\n--- stdout\n--- stderr\nerror: cannot read `--tls-cert` file `DIR/missing.pem`: no such file or directory\n"
    );
    // A key given as the certificate, and the certificate as the key.
    assert_eq!(
        serve(&["--tls-cert", &key, "--tls-key", &key]),
        "exit: 3\n--- stdout\n--- stderr\nerror: `--tls-cert` file `DIR/key.pem` holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)\n"
    );
    assert_eq!(
        serve(&["--tls-cert", &cert, "--tls-key", &cert]),
        "exit: 3\n--- stdout\n--- stderr\nerror: `--tls-key` file `DIR/cert.pem` holds no PEM private key (`-----BEGIN PRIVATE KEY-----`)\n"
    );
    // Another key than the certificate's.
    let other = rcgen::KeyPair::generate().unwrap();
    std::fs::write(pki.path("other.pem"), other.serialize_pem()).unwrap();
    let other = pki.arg("other.pem");
    assert_eq!(
        serve(&["--tls-cert", &cert, "--tls-key", &other]),
        "exit: 3\n--- stdout\n--- stderr\nerror: cannot use `--tls-key` file `DIR/other.pem` with `--tls-cert` file `DIR/cert.pem`: the key is not the certificate's (their public keys differ)\n"
    );
    // The client's CA file: refused before anything is sent.
    assert_eq!(
        run(
            home.path(),
            &[],
            &at("https://127.0.0.1:1", Some(missing.as_str()), &["get", "rp"]),
            "URL",
            dir
        ),
        "exit: 3\n--- stdout\n--- stderr\nerror: cannot read `--certificate-authority` file `DIR/missing.pem`: no such file or directory\n"
    );
    let config = pki.path("armadactl.yaml");
    std::fs::write(
        &config,
        "currentContext: c\ncontexts:\n  c:\n    armadaRestUrl: https://127.0.0.1:1\n    certificateAuthority: key.pem\n",
    )
    .unwrap();
    assert_eq!(
        run(home.path(), &[], &["--config", &config.display().to_string(), "get", "rp"], "URL", dir),
        "exit: 3\n--- stdout\n--- stderr\nerror: certificate authority file `DIR/key.pem` (`certificateAuthority` of context `c`) holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)\n"
    );
}

/// Reads until the server closes the connection; `false` if it is still open at `deadline`.
fn closed_by(stream: &mut std::net::TcpStream, deadline: Instant) -> bool {
    let mut buf = [0u8; 1024];
    stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => {}
        }
    }
    false
}

/// (h) docs/serve.md: a client that trickles its request header one byte every 300 ms keeps the
/// idle timeout (here 30 s) from ever firing; the header read timeout (here 1 s) closes it.
#[test]
fn a_trickled_request_header_is_cut_off_by_the_header_read_timeout() {
    let mut config = Config::new("127.0.0.1:0", Location::InMemory);
    config.idle_timeout = Duration::from_secs(30);
    config.header_read_timeout = Duration::from_secs(1);
    let s = TestServer::start_config(config);
    let addr = s.url.trim_start_matches("http://").to_string();
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\n").unwrap();
    let header = format!("Host: {addr}\r\nX-Slow: {}\r\n", "x".repeat(100));
    let started = Instant::now();
    let mut closed = false;
    for byte in header.bytes() {
        if slow.write_all(&[byte]).is_err() || closed_by(&mut slow, Instant::now() + Duration::from_millis(300)) {
            closed = true;
            break;
        }
    }
    assert!(closed, "the trickling client was never cut off");
    // Long before the idle timeout, and after the header read timeout (a liveness bound,
    // not a performance assertion).
    let after = started.elapsed();
    assert!(
        after >= Duration::from_secs(1) && after < Duration::from_secs(20),
        "{after:?}"
    );
    // The server still answers others.
    assert_eq!(crate::serve::call("GET", &format!("{}/health", s.url), None).0, 200);
}

/// (i) A client that connects to the TLS port and never sends a hello neither blocks the
/// accept loop (others are served meanwhile) nor holds its socket past the header read
/// timeout: at a cap of one connection, the next client gets in once the handshake's time
/// is up.
#[test]
fn a_silent_client_on_the_tls_port_is_bounded_by_the_header_read_timeout() {
    let pki = Pki::new();
    // A real process with the default limits: a silent client does not stall anyone.
    let p = pki.serve();
    let addr = p.url.trim_start_matches("https://").to_string();
    let _silent = std::net::TcpStream::connect(&addr).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let asked = Instant::now();
    let health = pki.client().get(format!("{}/health", p.url)).send().unwrap();
    assert_eq!(
        (health.status().as_u16(), health.text().unwrap()),
        (200, "ok".to_string())
    );
    // Served while the silent client's handshake (10 s) is still pending: had the handshake
    // run on the accept loop, this answer would have waited for it. (A behaviour bound far
    // from any speed, not a performance assertion.)
    assert!(asked.elapsed() < Duration::from_secs(5), "{:?}", asked.elapsed());
    drop(p);

    // In process, at a cap of one connection: the silent client holds the only slot until
    // the handshake's time (1 s) is up; the idle timeout (30 s) plays no part.
    let mut config = Config::new("127.0.0.1:0", Location::InMemory);
    config.tls = Some(pki.files());
    config.max_connections = Some(1);
    config.idle_timeout = Duration::from_secs(30);
    config.header_read_timeout = Duration::from_secs(1);
    let s = TestServer::start_config(config);
    let addr = s.url.trim_start_matches("https://").to_string();
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let health = pki.client().get(format!("{}/health", s.url)).send().unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert!(
        closed_by(&mut silent, Instant::now() + Duration::from_secs(10)),
        "the silent client is still connected"
    );
}

/// The anonymous-mode `Host` check (DNS rebinding) and the idle timeout hold over TLS too.
#[test]
fn the_host_check_and_the_idle_timeout_hold_over_tls() {
    let pki = Pki::new();
    let mut config = Config::new("127.0.0.1:0", Location::InMemory);
    config.tls = Some(pki.files());
    config.idle_timeout = Duration::from_millis(500);
    let s = TestServer::start_config(config);
    let client = pki.client();
    let url = format!("{}/v1/retry-policies", s.url);
    let ok = client.get(&url).send().unwrap();
    assert_eq!((ok.status().as_u16(), ok.text().unwrap()), (200, "{}".to_string()));
    let rebound = client.get(&url).header("host", "evil.example").send().unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
    assert_eq!(
        rebound.text().unwrap(),
        crate::serve::err(
            7,
            "host `evil.example` is not a loopback name or address; an anonymous server answers only requests addressed to localhost (protection against DNS rebinding)"
        )
    );
    // A client that starts a handshake and then goes quiet is closed by the idle timeout
    // (0.5 s) long before the header read timeout (10 s).
    let addr = s.url.trim_start_matches("https://").to_string();
    let mut quiet = std::net::TcpStream::connect(&addr).unwrap();
    quiet.write_all(&[0x16, 0x03, 0x01]).unwrap();
    assert!(
        closed_by(&mut quiet, Instant::now() + Duration::from_secs(8)),
        "still open"
    );
}

/// `history --lookout-url` uses the same TLS settings as the Armada connection: without the
/// CA the certificate is refused; with it the TLS connection is made (this server is not
/// Lookout, so the first request is then answered 404, which is past TLS).
#[test]
fn history_from_lookout_uses_the_tls_settings() {
    let pki = Pki::new();
    let p = pki.serve();
    let home = temp_home();
    let (url, dir) = (p.url.as_str(), pki.dir.path());
    let history = |extra: &[&str]| {
        let mut args = vec!["history", "--lookout-url", url, "--queue", "q"];
        args.extend_from_slice(extra);
        run(home.path(), &[], &args, url, dir)
    };
    assert_eq!(
        history(&[]),
        "exit: 4\n--- stdout\n--- stderr\nerror: Lookout at `URL/api/v1/jobs` is unreachable: invalid peer certificate: UnknownIssuer\n"
    );
    let not_lookout = "error: Lookout at `URL/api/v1/jobs` answered 404 Not Found: Not Found\n\n";
    assert_eq!(
        history(&["--certificate-authority", &pki.arg("cert.pem")]),
        format!("exit: 4\n--- stdout\n--- stderr\n{not_lookout}")
    );
    assert_eq!(
        history(&["--insecure-skip-tls-verify"]),
        format!("exit: 4\n--- stdout\n--- stderr\nwarning: TLS certificate verification is off (`--insecure-skip-tls-verify`): anyone on the network path can read and change this connection, credentials included\n{not_lookout}")
    );
}

/// The usual self-signed certificate (`openssl req -x509`: marked as a CA) is trusted by
/// `--certificate-authority` as kubectl and curl trust it; without the flag it is a
/// certificate error that says it is self-signed, also on the first request of a `create`
/// (the dialect probe reports it instead of taking the server for upstream Armada).
#[test]
fn a_ca_flagged_self_signed_certificate_is_trusted_by_file() {
    let pki = Pki::new_ca_flagged();
    let p = pki.serve();
    let home = temp_home();
    let url = p.url.replacen("127.0.0.1", "localhost", 1);
    let (url, dir) = (url.as_str(), pki.dir.path());
    let ca = pki.arg("cert.pem");
    let token = [("ARMADA_TOKEN", "tok-1")];
    assert_eq!(
        run(
            home.path(),
            &token,
            &at(url, Some(ca.as_str()), &["create", "-f", POLICY]),
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra created\n--- stderr\n"
    );
    assert_eq!(
        run(home.path(), &token, &at(url, None, &["create", "-f", POLICY]), url, dir),
        unverified(&format!("{POLICY}: cannot create retry policy `infra`"), "it is self-signed (a CA certificate presented as the server's own) and not among the certificates retryctl trusts")
    );
    // Only the very certificate pinned: another CA-flagged certificate for the same name
    // (what a man in the middle could make) is refused.
    let other_pki = Pki::new_ca_flagged();
    let other_ca = other_pki.arg("cert.pem");
    assert_eq!(
        run(
            home.path(),
            &token,
            &at(url, Some(other_ca.as_str()), &["get", "rp"]),
            url,
            dir
        ),
        unverified("cannot list retry policies", "it is self-signed (a CA certificate presented as the server's own) and not among the certificates retryctl trusts")
    );
    // Lookout's source trusts the same way: past TLS, this server (not Lookout) answers 404.
    let out = run(
        home.path(),
        &[],
        &[
            "history",
            "--lookout-url",
            url,
            "--queue",
            "q",
            "--certificate-authority",
            &ca,
        ],
        url,
        dir,
    );
    assert_eq!(
        out,
        "exit: 4\n--- stdout\n--- stderr\nerror: Lookout at `URL/api/v1/jobs` answered 404 Not Found: Not Found\n\n"
    );
    // The name is still checked: 127.0.0.1 is not among the certificate's names.
    let other = p.url.as_str();
    let out = run(
        home.path(),
        &token,
        &at(other, Some(ca.as_str()), &["get", "rp"]),
        url,
        dir,
    );
    assert!(
        out.starts_with("exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: the TLS certificate of the server at `https://127.0.0.1:")
            && out.contains("certificate not valid for name \"127.0.0.1\""),
        "{out}"
    );
}

/// docs/cli.md: with no `--certificate-authority`, the server is verified against the system's
/// trusted roots, as kubectl verifies it: a private CA that an administrator added to the OS
/// store is trusted with no flag. The store is named here by `SSL_CERT_FILE` (what OpenSSL,
/// Go and retryctl read instead of the distribution's bundle), so the test does not depend on
/// this machine's store.
#[test]
fn the_system_trust_store_is_trusted_by_default() {
    let pki = Pki::new_private_ca("Example Corp CA");
    let p = pki.serve();
    let home = temp_home();
    let (url, dir) = (p.url.as_str(), pki.dir.path());
    let ca = pki.arg("ca.pem");
    assert_eq!(
        run(
            home.path(),
            &[("ARMADA_TOKEN", "tok-1"), ("SSL_CERT_FILE", &ca)],
            &at(url, None, &["create", "-f", POLICY]),
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra created\n--- stderr\n"
    );
    // A store that does not hold that CA: the server does not verify.
    let other = Pki::new_private_ca("Other Corp CA");
    let other_ca = other.arg("ca.pem");
    assert_eq!(
        run(
            home.path(),
            &[("ARMADA_TOKEN", "tok-1"), ("SSL_CERT_FILE", &other_ca)],
            &at(url, None, &["get", "rp"]),
            url,
            dir
        ),
        unverified(
            "cannot list retry policies",
            "it is not signed by a certificate authority retryctl trusts (unknown issuer)"
        )
    );
    // A store holding another CA of the same name (re-created, or an impostor): named as such.
    let twin = Pki::new_private_ca("Example Corp CA");
    assert_eq!(
        run(
            home.path(),
            &[("ARMADA_TOKEN", "tok-1"), ("SSL_CERT_FILE", &twin.arg("ca.pem"))],
            &at(url, None, &["get", "rp"]),
            url,
            dir
        ),
        unverified("cannot list retry policies", "its signature does not match the key of the certificate authority of that name that retryctl trusts (bad signature): another authority with the same name signed it")
    );
    // The CA by flag works as well, whatever the store holds.
    assert_eq!(
        run(
            home.path(),
            &[("ARMADA_TOKEN", "tok-1"), ("SSL_CERT_FILE", &other_ca)],
            &at(url, Some(ca.as_str()), &["get", "rp", "-o", "name"]),
            url,
            dir
        ),
        "exit: 0\n--- stdout\nretrypolicy/infra\n--- stderr\n"
    );
}
