//! The tests' own set-up (support/): a part the machine lacks and the tests cannot install
//! themselves is announced where a person running `cargo test` sees it, outside the output
//! libtest captures, naming the tests that did not run; under `CI=true` it fails them.
//! Checked by running tests of this binary in a child with each part pointed at nothing.

use std::process::{Command, Output};

const PG_TEST: &str = "history::every_job_is_read_whatever_the_number";
const CHROMIUM_TEST: &str = "simulate_report::html_report_of_a_plain_replay_renders_in_a_real_browser";
const PYTHON_TEST: &str = "grpc::bad_messages_are_refused_as_invalid_never_with_a_panic";

/// This test binary running exactly `tests`, with PostgreSQL, Chromium and the Python client
/// pointed at paths where there is nothing.
fn run_without_the_parts(tests: &[&str], ci: bool) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.arg("--exact")
        .args(tests)
        .env_remove("CI")
        .env("RETRYCTL_TEST_PG_BIN", "/nonexistent")
        .env("CHROMIUM", "/nonexistent/chromium")
        .env("RETRYCTL_TEST_PYTHON", "/nonexistent/python3");
    if ci {
        cmd.env("CI", "true");
    }
    cmd.output().unwrap()
}

#[test]
fn each_missing_part_is_one_line_on_stderr_naming_the_tests_it_skipped() {
    let out = run_without_the_parts(&[PG_TEST, CHROMIUM_TEST, PYTHON_TEST], false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    assert!(stdout.contains("test result: ok. 3 passed;"), "{stdout}");
    // Not in what libtest captures (it would show only for a failed test): on stderr, after
    // libtest's summary, once per part.
    assert!(!stdout.contains("SKIPPED"), "{stdout}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "!!!!!!!! SKIPPED 1 test: Chromium not found (no file at `$CHROMIUM`, /nonexistent/chromium); \
             install it: `apt-get install -y chromium`; did NOT run: {CHROMIUM_TEST}\n\
             !!!!!!!! SKIPPED 1 test: PostgreSQL not found (no `initdb` and `postgres` in \
             `$RETRYCTL_TEST_PG_BIN` (/nonexistent)); install it: `apt-get install -y postgresql`; \
             did NOT run: {PG_TEST}\n\
             !!!!!!!! SKIPPED 1 test: upstream's Python client not found (`$RETRYCTL_TEST_PYTHON`, \
             /nonexistent/python3, cannot import armada_client); install it: \
             `/nonexistent/python3 -m pip install 'armada-client==0.5.1' 'PyYAML==6.0.2' 'jsonschema==4.23.0'`; did NOT run: {PYTHON_TEST}\n"
        )
    );
}

#[test]
fn under_ci_a_missing_part_fails_the_tests_that_need_it() {
    let out = run_without_the_parts(&[PG_TEST], true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(101), "{}", crate::support::format_output(&out));
    assert!(stdout.contains("test result: FAILED. 0 passed; 1 failed;"), "{stdout}");
    assert!(
        stdout.contains(
            "PostgreSQL not found (no `initdb` and `postgres` in `$RETRYCTL_TEST_PG_BIN` \
             (/nonexistent)) under CI=true; `.ci/run` installs it (`apt-get install -y postgresql`)"
        ),
        "{stdout}"
    );
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}
