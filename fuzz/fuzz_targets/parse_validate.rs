//! Fuzz target: any text through the YAML parser, the envelope check, strict decoding and
//! the validator (`model::parse_documents`), for every expected-kind restriction the CLI
//! uses. Properties beyond "does not panic":
//! - every diagnostic of a document carries a position (the parser knows where it is);
//! - a document with no errors and a RetryPolicy resource re-encodes (`model::encode`, v1)
//!   to YAML that parses back, without errors, to the same policy.

#![no_main]

use libfuzzer_sys::fuzz_target;
use retryctl::model::encode::{policy_document, to_yaml};
use retryctl::model::{parse_documents, ApiVersion, Kind, Resource};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for expected in [
        None,
        Some(&[Kind::RetryPolicy][..]),
        Some(&[Kind::RetryPolicy, Kind::Queue][..]),
    ] {
        let parsed = parse_documents(text, expected);
        for doc in &parsed.documents {
            for d in &doc.diagnostics {
                assert!(d.pos.is_some(), "diagnostic without a position: {d:?}");
            }
            if !doc.is_valid() {
                continue;
            }
            if let Some(Resource::RetryPolicy(policy)) = &doc.resource {
                let yaml = to_yaml(&policy_document(policy, ApiVersion::V1).expect("v1 always fits"));
                let again = parse_documents(&yaml, None);
                assert!(again.syntax_error.is_none(), "{yaml}");
                assert_eq!(again.documents.len(), 1, "{yaml}");
                let back = &again.documents[0];
                assert!(
                    back.is_valid(),
                    "re-encoded policy is invalid: {:?}\n{yaml}",
                    back.diagnostics
                );
                assert_eq!(back.resource.as_ref(), doc.resource.as_ref(), "{yaml}");
            }
        }
    }
});
