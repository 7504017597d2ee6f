//! What `retryctl watch` refuses before it starts (docs/watch.md "Exit status"): a `--poll`
//! below `1s`, and a `--since` later than now (a typo, `2062` for `2026`, or ten minutes
//! ahead, would start a watch that skips every job without a word, after a restart too).
//! Exit 2 naming the flag, and nothing written to `--state`.

use std::time::Duration;

use crate::support::{retryctl, temp_home};
use crate::watch::CURRENT;

#[test]
fn a_poll_below_a_second_and_a_since_later_than_now_are_refused_at_the_start() {
    let home = temp_home();
    let state = home.path().join("s.json");
    let run = |extra: &[&str]| {
        let out = retryctl(home.path())
            .env("LOOKOUT_DB", "postgresql://lookout@127.0.0.1:1/lookout")
            .args(["watch", "--baseline", CURRENT, "--listen", "127.0.0.1:0", "--state"])
            .arg(&state)
            .args(extra)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        assert!(out.stdout.is_empty());
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    for poll in ["1ns", "500ms", "0s"] {
        assert_eq!(
            run(&["--poll", poll]),
            (
                Some(2),
                format!(
                    "error: invalid `--poll` `{poll}`: expected a duration of at least `1s` such as `30s` or `1m`\n"
                )
            )
        );
    }
    // Ten minutes ahead of the machine's clock, to the second.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let ahead = retryctl::model::timestamp::Timestamp((now + 600) * 1_000_000_000).to_string();
    for since in ["2099-01-01T00:00:00Z", "2062-11-15T00:00:00Z", ahead.as_str()] {
        let (code, err) = run(&["--since", since]);
        assert_eq!(code, Some(2), "{err}");
        let prefix = format!("error: invalid `--since` `{since}`: later than now (`");
        let suffix = "`); give a time in the past or a duration back from now such as `7d`\n";
        assert!(err.starts_with(&prefix) && err.ends_with(suffix), "{err}");
        // Now, to the second, as the machine's clock says it.
        let now = &err[prefix.len()..err.len() - suffix.len()];
        assert_eq!(now.len(), "2026-11-29T00:00:00Z".len(), "{err}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{err}");
    }
    assert!(!state.exists(), "a refused start wrote `--state`");
}
