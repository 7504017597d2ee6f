//! A real JSON Schema validator (draft 2020-12) for the tests that `retryctl schema` describes
//! what `validate` accepts: checking the schema with our own code would prove nothing.
//!
//! The validator is Python's `jsonschema`, the reference implementation, in the tests'
//! virtualenv (support/python.rs; pinned in `PACKAGES`). A Rust validator crate was the largest
//! unit of the test build (`jsonschema`, 96 s of one core) and, through the features its
//! dependencies turn on, made `cargo test` compile again the dependencies `cargo run` had
//! built (BENCHMARKS.md "Build time"). One Python process checks a whole batch.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Checks each schema (`check_schema`: it must be a valid draft 2020-12 schema, or the batch
/// panics naming it), then each `(schema index, document)`: the errors of each document, in
/// the validator's words with the path in the document (`… at /spec/rules/0`), none when valid.
pub fn errors(python: &Path, schemas: &[serde_json::Value], docs: &[(usize, serde_json::Value)]) -> Vec<Vec<String>> {
    const SCRIPT: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
batch = json.load(sys.stdin)
validators = []
for i, schema in enumerate(batch["schemas"]):
    try:
        Draft202012Validator.check_schema(schema)
    except Exception as e:
        sys.exit(f"schema {i} is not a draft 2020-12 schema: {e}")
    validators.append(Draft202012Validator(schema))
out = []
for i, doc in batch["docs"]:
    out.append(sorted(
        f"{e.message} at /{'/'.join(str(p) for p in e.absolute_path)}"
        for e in validators[i].iter_errors(doc)
    ))
json.dump(out, sys.stdout)
"#;
    let batch = serde_json::json!({ "schemas": schemas, "docs": docs });
    let mut child = Command::new(python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let written = std::thread::spawn(move || stdin.write_all(batch.to_string().as_bytes()));
    let out = child.wait_with_output().expect("python runs");
    written.join().expect("the writer ends").expect("the batch is written");
    assert!(
        out.status.success(),
        "the JSON Schema validator failed: {}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the validator answers JSON")
}

/// Whether each document is valid against the one schema.
pub fn valid(python: &Path, schema: &serde_json::Value, docs: &[serde_json::Value]) -> Vec<bool> {
    let docs: Vec<_> = docs.iter().map(|d| (0, d.clone())).collect();
    errors(python, std::slice::from_ref(schema), &docs)
        .into_iter()
        .map(|e| e.is_empty())
        .collect()
}
