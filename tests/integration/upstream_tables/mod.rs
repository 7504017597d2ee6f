//! Upstream Armada's own test tables at commit `207cc9e`, a row a case, run through the
//! `retryctl` binary as a user runs it: one file per upstream test file, each test named after
//! upstream's row. Each file lists, in a comment, the rows retryctl cannot express and why.
//! Every row retryctl can express holds; beyond the tables, each file adds the cases where
//! retryctl once read Go's semantics otherwise (ASCII regexp classes, action spellings).
//!
//! The retry engine's `TestEngine_Evaluate` (`internal/scheduler/retry/engine_test.go`) is a
//! unit test next to the engine (`src/engine/upstream/tests.rs`), and the categorizer's
//! `TestClassify` also has one next to the classifier (`src/engine/categorizer/tests.rs`).

use std::process::Output;

use serde_json::Value;

use crate::support::{format_output, retryctl, temp_home};

mod armadactl;
mod classifier;
mod deserialize;
mod engine;
mod errormatch;
mod executor_paths;
mod validation;

/// A scratch directory the command runs in, so that the files a case writes are named in
/// the output as the user named them (`p.yaml`).
pub struct Scratch {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    /// `$ARMADA_URL`, the server the commands talk to.
    url: Option<String>,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("tempdir"),
            home: temp_home(),
            url: None,
        }
    }

    /// A scratch directory whose commands talk to the server at `url`.
    pub fn remote(url: &str) -> Scratch {
        Scratch {
            url: Some(url.to_string()),
            ..Scratch::new()
        }
    }

    /// Writes `name` (relative to the scratch directory) and returns `self`.
    pub fn file(&self, name: &str, text: &str) -> &Scratch {
        std::fs::write(self.dir.path().join(name), text).expect("write");
        self
    }

    pub fn output(&self, args: &[&str]) -> Output {
        let mut cmd = retryctl(self.home.path());
        if let Some(url) = &self.url {
            cmd.env("ARMADA_URL", url);
        }
        cmd.current_dir(self.dir.path()).args(args).output().expect("runs")
    }

    /// The whole exchange: `exit: N`, stdout and stderr.
    pub fn run(&self, args: &[&str]) -> String {
        format_output(&self.output(args))
    }
}

/// `retryctl validate --upstream -f p.yaml` on `yaml`: the whole exchange.
pub fn validate_upstream(yaml: &str) -> String {
    let s = Scratch::new();
    // Upstream's rows validate a policy alone: the note retryctl adds when no executor config
    // was given to check its categories against is not theirs (suggest_cluster.rs tests it).
    s.file("p.yaml", yaml).run(&["validate", "--upstream", "-f", "p.yaml"]).replace(
        "note: the categories the policies name were not checked against an executor config: give the one the executor will run with `--categorizer FILE`\n",
        "",
    )
}

/// `retryctl validate -f FILE` on `text` written as `file`: the whole exchange.
pub fn validate_file(file: &str, text: &str) -> String {
    let s = Scratch::new();
    s.file(file, text).run(&["validate", "-f", file])
}

/// The exchange `validate` prints for one document in `file` (named `header` on its line,
/// `p.yaml (RetryPolicy `p`)`) with exactly one error, `error`.
pub fn one_error(header: &str, error: &str) -> String {
    format!(
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\n{header}\n  error: {error}\n"
    )
}

/// `simulate -o json` of `stdout`, which must have succeeded.
pub fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", format_output(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", format_output(out)))
}

/// What upstream's `ClassifyResult.Action` is: whether the executor deletes the failed pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodAction {
    Delete,
    Retain,
}

/// The policy every classification is replayed under: every failure retried once, so that a
/// retry of a run whose pod the executor keeps is counted as a collision.
const RETRY_ONCE: &str =
    "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: retry-once\nretryLimit: 1\ndefaultAction: Retry\n";

/// `simulate -f p.yaml --engine upstream --categorizer c.yaml --history h.jsonl -o json`, as a
/// user runs it, with `config` the categorizer file, the policy [`RETRY_ONCE`] and `history`
/// the history's one line: its output, decoded.
pub fn replayed(config: &str, history: &str) -> Value {
    let s = Scratch::new();
    s.file("c.yaml", config)
        .file("p.yaml", RETRY_ONCE)
        .file("h.jsonl", &format!("{history}\n"));
    json(&s.output(&[
        "simulate",
        "-f",
        "p.yaml",
        "--engine",
        "upstream",
        "--categorizer",
        "c.yaml",
        "--history",
        "h.jsonl",
        "-o",
        "json",
    ]))
}

/// What the executor's categorizer makes of one failed run, as the user sees it in `simulate
/// --engine upstream --categorizer c.yaml -o json`: the decision record's `category` and
/// `subcategory` ("" for none, as upstream's `ClassifyResult` states them) and the pod's fate
/// (a retried run whose pod is kept collides with it: `summary.collisions` is 1).
///
/// `categories` is the body of an enabled `errorCategories` mapping (upstream's tests build
/// the classifier directly, which is always on), `run` one FailureHistory run as JSON.
pub fn classify(categories: &str, run: &str) -> (String, String, PodAction) {
    let body: String = categories.lines().map(|l| format!("  {l}\n")).collect();
    let v = replayed(
        &format!("errorCategories:\n  enabled: true\n{body}"),
        &format!("{{\"job\":{{\"id\":\"j\"}},\"runs\":[{run}]}}"),
    );
    let record = &v["jobs"][0]["runs"][0];
    assert_eq!(record["decision"], "retry", "{record}");
    let text = |field: &str| match &record[field] {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => panic!("{field}: {other}"),
    };
    let action = match v["summary"]["collisions"].as_u64() {
        Some(0) => PodAction::Delete,
        Some(1) => PodAction::Retain,
        other => panic!("collisions: {other:?}: {v}"),
    };
    (text("category"), text("subcategory"), action)
}
