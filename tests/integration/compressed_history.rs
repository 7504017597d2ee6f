//! A compressed history (docs/simulate.md "Inputs"): gzip's or zstd's first bytes at the start
//! of `--history` — a file whatever its name, stdin, another stream — are refused by what
//! they are (exit 3, nothing on stdout, how to decompress it), never read as YAML or JSON
//! that fails; a directory's compressed file is its own error and the rest is read.

use std::io::Write;
use std::path::Path;

use crate::support::{format_output, retryctl, root, temp_home};

const POLICY: &str = "testdata/policies/valid/infra.yaml";
const JOB: &str = "{\"job\":{\"id\":\"a\"},\"runs\":[{\"outcome\":\"succeeded\"}]}\n";

fn gzip(text: &str) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(text.as_bytes()).unwrap();
    z.finish().unwrap()
}

fn run(home: &Path, args: &[&str], stdin: &[u8]) -> std::process::Output {
    retryctl(home)
        .current_dir(root())
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap()
}

fn refused(what: &str, kind: &str, hint: &str) -> String {
    format!(
        "exit: 3\n--- stdout\n--- stderr\nerror: {what} is {kind}-compressed: retryctl reads histories uncompressed\n\nhint: decompress it first: `{hint} | retryctl … --history -`\n"
    )
}

#[test]
fn a_compressed_history_is_refused_by_what_it_is() {
    let home = temp_home();
    let dir = home.path();
    let plain = dir.join("week.jsonl");
    std::fs::write(&plain, JOB).unwrap();
    let gz = dir.join("week.jsonl.gz");
    std::fs::write(&gz, gzip(JOB)).unwrap();
    // Named as if it were not: its bytes tell.
    let hidden = dir.join("hidden.jsonl");
    std::fs::write(&hidden, gzip(JOB)).unwrap();
    // zstd's magic and a payload: enough to be refused.
    let zst = dir.join("week.yaml");
    std::fs::write(&zst, b"\x28\xb5\x2f\xfd\x04\x00\x51\x00\x00").unwrap();
    let (plain, gz, hidden, zst) = (
        plain.to_str().unwrap(),
        gz.to_str().unwrap(),
        hidden.to_str().unwrap(),
        zst.to_str().unwrap(),
    );
    for command in [
        &["simulate", "-f", POLICY][..],
        &["suggest"][..],
        &["tune", "-f", POLICY, "--vary", "infra:spec.retryLimit=1..2"][..],
    ] {
        let with = |history: &str, stdin: &[u8]| {
            let mut args = command.to_vec();
            args.extend(["--history", history]);
            format_output(&run(dir, &args, stdin))
        };
        assert!(with(plain, b"").starts_with("exit: 0\n"), "{}", with(plain, b""));
        assert_eq!(
            with(gz, b""),
            refused(&format!("`{gz}`"), "gzip", &format!("zcat {gz}"))
        );
        assert_eq!(
            with(hidden, b""),
            refused(&format!("`{hidden}`"), "gzip", &format!("zcat {hidden}"))
        );
        assert_eq!(
            with(zst, b""),
            refused(&format!("`{zst}`"), "zstd", &format!("zstdcat {zst}"))
        );
        // A stream's file is not known: the hint says where it goes.
        assert_eq!(with("-", &gzip(JOB)), refused("stdin", "gzip", "zcat FILE"));
        assert_eq!(
            with("/dev/stdin", &gzip(JOB)),
            refused("`/dev/stdin`", "gzip", "zcat FILE")
        );
    }
}

/// In a directory, a compressed file is that file's error (exit 3, as an unreadable file's),
/// and the other files' jobs are replayed.
#[test]
fn a_directorys_compressed_file_is_its_own_error() {
    let home = temp_home();
    let dir = home.path().join("week");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.jsonl"), JOB).unwrap();
    std::fs::write(dir.join("b.jsonl"), gzip(JOB.replace("\"a\"", "\"b\"").as_str())).unwrap();
    let out = run(
        home.path(),
        &[
            "simulate",
            "-f",
            POLICY,
            "--history",
            dir.to_str().unwrap(),
            "-o",
            "json",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: {}: gzip-compressed: retryctl reads histories uncompressed\n",
            dir.join("b.jsonl").display()
        )
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["jobs"], 1, "{v}");
}
