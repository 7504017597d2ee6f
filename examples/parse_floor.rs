//! The parsing floor for the `simulate` benchmark (docs/reference/bars.md: "single-threaded within 1.5×
//! of a typed serde_json parse of the same lines"): reads a JSON Lines file of
//! FailureHistory records line by line and deserializes each into typed structs that
//! borrow from the line, on one thread, and does nothing else.
//!
//!     cargo build --release --example parse_floor
//!     target/release/examples/parse_floor FILE.jsonl
//!
//! Prints the number of jobs and runs (so the work cannot be optimized away).

use std::io::BufRead;

use serde::Deserialize;

#[derive(Deserialize)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(borrow)]
    job: Option<Job<'a>>,
    #[serde(borrow)]
    runs: Vec<Run<'a>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
struct Job<'a> {
    id: Option<&'a str>,
    queue: Option<&'a str>,
    termination_grace_period: Option<&'a str>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    node: Option<&'a str>,
    queued_for: Option<&'a str>,
    run_for: Option<&'a str>,
    #[serde(borrow, default)]
    conditions: Vec<&'a str>,
    termination_confirmed_after: Option<&'a str>,
    #[serde(borrow, default)]
    containers: Vec<Container<'a>>,
    category: Option<&'a str>,
    subcategory: Option<&'a str>,
    outcome: Option<&'a str>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
struct Container<'a> {
    name: Option<&'a str>,
    exit_code: Option<i64>,
    reason: Option<&'a str>,
    message: Option<&'a str>,
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: parse_floor FILE.jsonl");
    let file = std::fs::File::open(&path).expect("readable file");
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    let (mut jobs, mut runs, mut bad) = (0u64, 0u64, 0u64);
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).expect("read") == 0 {
            break;
        }
        let line = buf.trim_ascii();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Line<'_>>(line) {
            Ok(l) => {
                jobs += 1;
                runs += l.runs.len() as u64;
            }
            Err(_) => bad += 1,
        }
    }
    println!("{jobs} jobs, {runs} runs, {bad} unparsed");
}
