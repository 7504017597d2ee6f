//! Fuzz target: parse + validate + lint (with and without scheduler limits and the upstream
//! target) + every report format, as `retryctl validate` runs them. Property: no panic, and
//! the JSON report is valid JSON.

#![no_main]

use libfuzzer_sys::fuzz_target;
use retryctl::input::SourceFile;
use retryctl::model::lint::{lint_documents, LintOptions};
use retryctl::model::parse_documents;
use retryctl::output::report;
use retryctl::output::Style;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options = [
        LintOptions::default(),
        LintOptions {
            global_max_retries: Some(2),
            default_policy_name: Some("absent".into()),
            upstream: true,
        },
    ];
    for opts in &options {
        let parsed = parse_documents(text, None);
        let mut file = SourceFile {
            name: "fuzz.yaml".into(),
            documents: parsed.documents,
            errors: parsed.syntax_error.into_iter().collect(),
        };
        lint_documents(file.documents.iter_mut(), opts);
        let files = [file];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        report::write_text(&files, Style { color: true }, &mut out, &mut err).unwrap();
        report::write_github(&files, &mut out).unwrap();
        let mut json = Vec::new();
        report::write_json(&files, false, &mut json).unwrap();
        serde_json::from_slice::<serde_json::Value>(&json).expect("the JSON report parses");
    }
});
