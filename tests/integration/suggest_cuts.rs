//! suggest's tables never print two different signatures as the same text
//! (docs/reference/suggest.md "Per signature"): one cut to fit its column keeps what tells it
//! apart (the cut in the middle), so a registry's 503 outage and a missing tag are not two
//! rows reading `podError "Failed to pull image "registry/team/m…`.

use crate::support::{format_output, retryctl, temp_home};

/// 30 jobs whose image pull failed on the registry's 503, then ran; 30 whose tag is missing,
/// twice, then failed: two signatures whose first 60 characters are the same.
fn history() -> String {
    let pull = |why: &str| {
        format!(
            r#"{{"podError":"Failed to pull image \"registry/team/model-training-large:v3\": {why}","runFor":"0s"}}"#
        )
    };
    let (outage, missing) = (pull("rpc error: 503 Service Unavailable"), pull("manifest unknown"));
    let ok = r#"{"outcome":"succeeded","runFor":"1h"}"#;
    let mut lines = Vec::new();
    for i in 0..30 {
        lines.push(format!(
            r#"{{"job":{{"id":"o{i}","queue":"q"}},"runs":[{outcome},{ok}]}}"#,
            outcome = outage
        ));
        lines.push(format!(
            r#"{{"job":{{"id":"m{i}","queue":"q"}},"runs":[{missing},{missing}]}}"#
        ));
    }
    lines.join("\n") + "\n"
}

#[test]
fn two_signatures_never_read_alike_in_suggest_s_tables() {
    let home = temp_home();
    let h = home.path().join("h.jsonl");
    std::fs::write(&h, history()).unwrap();
    let suggest = |format: &str| {
        let out = retryctl(home.path())
            .args(["suggest", "--history"])
            .arg(&h)
            .args(["--min-trials", "5", "-o", format])
            .output()
            .unwrap();
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // The two signatures' cells of `format`'s table: each row's first cell, two different.
    let cells = |format: &str, row: &str, sep: &str| {
        let text = suggest(format);
        let cells: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with(row))
            .map(|l| l.split(sep).next().unwrap().to_string())
            .collect();
        assert_eq!(cells.len(), 2, "{text}");
        assert_ne!(cells[0], cells[1], "{text}");
        cells
    };
    let table = cells("table", "podError ", "  ");
    assert!(
        table.iter().any(|c| c.ends_with("Unavailable\"")) && table.iter().any(|c| c.ends_with("unknown\"")),
        "{table:?}"
    );
    cells("markdown", "| podError ", " | ");
}
