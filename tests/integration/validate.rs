//! `retryctl validate`: exit codes, messages and positions as a user sees them.

use crate::support::{exchange, retryctl, temp_home};

#[test]
fn valid_testdata_passes_and_counts_documents() {
    let home = temp_home();
    let out = exchange(retryctl(home.path()).args(["validate", "-f", "testdata/policies/valid"]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert!(
        out.contains("checked 7 documents in 7 files: 7 valid, 0 invalid"),
        "{out}"
    );
}
