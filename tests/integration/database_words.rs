//! The database's own words are escaped (docs/lookout.md): the message, detail and hint of a
//! PostgreSQL error, whatever answers on the port, are shown on one line with their control
//! characters escaped (`\x0a`, `\x1b`), as row text and DSNs are, in `history`'s and every
//! verb's errors, in `watch`'s log and in `/healthz`. A line break would forge a line of the
//! log; an escape sequence would reach the terminal. The server here is a fake on a socket
//! that answers every connection's start-up with such an `ErrorResponse`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::support::{format_output, retryctl, temp_home};
use crate::watch::{state_file, Watch, CURRENT};

const MESSAGE: &str = "no such role\nretryctl watch: poll succeeded\x1b[2J";
const DETAIL: &str = "line\rbreak";
const HINT: &str = "ask\x07 the admin";
const SHOWN: &str =
    "no such role\\x0aretryctl watch: poll succeeded\\x1b[2J (DETAIL: line\\x0dbreak) (HINT: ask\\x07 the admin)";

/// A server on 127.0.0.1 that reads each connection's start-up message (answering `N` to a
/// TLS request first) and answers a FATAL `ErrorResponse` of [`MESSAGE`], [`DETAIL`] and
/// [`HINT`]; its port.
fn liar() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                loop {
                    let mut len = [0u8; 4];
                    if conn.read_exact(&mut len).is_err() {
                        return;
                    }
                    let mut body = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
                    if conn.read_exact(&mut body).is_err() {
                        return;
                    }
                    // SSLRequest and GSSENCRequest: no.
                    if body.len() == 4
                        && matches!(u32::from_be_bytes(body[..4].try_into().unwrap()), 80877103 | 80877104)
                    {
                        let _ = conn.write_all(b"N");
                        continue;
                    }
                    break;
                }
                let mut fields = Vec::new();
                for (code, text) in [
                    (b'S', "FATAL"),
                    (b'V', "FATAL"),
                    (b'C', "XX000"),
                    (b'M', MESSAGE),
                    (b'D', DETAIL),
                    (b'H', HINT),
                ] {
                    fields.push(code);
                    fields.extend_from_slice(text.as_bytes());
                    fields.push(0);
                }
                fields.push(0);
                let mut answer = vec![b'E'];
                answer.extend_from_slice(&(fields.len() as u32 + 4).to_be_bytes());
                answer.extend_from_slice(&fields);
                let _ = conn.write_all(&answer);
            });
        }
    });
    port
}

#[test]
fn a_servers_error_text_is_one_escaped_line_in_every_verbs_error() {
    let port = liar();
    let dsn = format!("postgresql://lookout@127.0.0.1:{port}/lookout");
    let home = temp_home();
    let want = format!("error: cannot reach the Lookout database at `{dsn}`: {SHOWN}\n");
    for args in [
        vec!["history", "--lookout-db", &dsn, "--since", "1d"],
        vec![
            "simulate",
            "-f",
            CURRENT,
            "--lookout-db",
            &dsn,
            "--queue",
            "ml",
            "--since",
            "1d",
        ],
    ] {
        let out = retryctl(home.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "{args:?}: {}", format_output(&out));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.ends_with(&want), "{args:?}: {err}");
        assert!(
            !err.contains('\x1b') && err.lines().all(|l| !l.starts_with("retryctl watch: poll succeeded")),
            "{err:?}"
        );
    }
}

#[test]
fn a_servers_error_text_is_one_escaped_line_in_watchs_log_and_healthz() {
    let port = liar();
    let home = temp_home();
    let dsn = format!("postgresql://lookout@127.0.0.1:{port}/lookout");
    let w = Watch::start(home.path(), &dsn, &state_file(home.path()), &[]);
    let failed = format!(
        "retryctl watch: poll failed (connect): cannot reach the Lookout database at `{dsn}`: {SHOWN}; polling again in "
    );
    // After 3 failed polls, /healthz says why, in the same words.
    let deadline = Instant::now() + Duration::from_secs(60);
    let healthz = loop {
        let (status, body) = w.get("/healthz");
        if body.contains("polls failed") || Instant::now() > deadline {
            break (status, body);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(healthz.0, 503, "{}", healthz.1);
    assert!(healthz.1.contains(SHOWN), "{}", healthz.1);
    assert!(
        !healthz.1.contains('\x1b') && !healthz.1.trim_end().contains('\n'),
        "{:?}",
        healthz.1
    );
    let log = w.log();
    assert!(log.lines().filter(|l| l.starts_with(&failed)).count() >= 3, "{log}");
    for line in log.lines() {
        assert!(
            !line.contains('\x1b') && !line.starts_with("retryctl watch: poll succeeded"),
            "{log}"
        );
    }
}
