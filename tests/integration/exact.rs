//! Exactly as today's Armada, on any history retryctl accepts: sums of device time past 64
//! bits in every format and in `-o partial` (a Lookout export sharded on a real PostgreSQL
//! included), a sum past 128 bits refused by name, Go's ASCII regexp classes in the policies'
//! matcher and the executor's categorizer, upstream's action spellings, and Armada's own
//! `preemption` category.

use std::path::Path;

use crate::shards::{merges_to, run, shards};
use crate::support::pg::{lookout_db, WINDOW};
use crate::support::{exchange, format_output, retryctl, root, temp_home};

const OLD: &str = "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata: {name: p}
spec:
  retryLimit: 1
  rules:
    - action: Retry
      onExitCodes: {operator: In, values: [137]}
";

const QUEUE: &str = "apiVersion: armadaproject.io/v1
kind: Queue
name: ml
retryPolicies: [p]
";

/// Jobs of a tebibyte of memory and 1,024 GPUs whose runs last a day: each run alone is past
/// 64 bits of nanoseconds × thousandths of a GPU.
fn tebibyte_history(jobs: usize) -> String {
    (0..jobs)
        .map(|j| {
            format!(
                concat!(
                    r#"{{"job":{{"id":"big-{j:03}","queue":"ml","memory":"1Ti","resources":{{"gpu":"1024","cpu":"256"}}}},"#,
                    r#""runs":[{{"node":"n1","runFor":"24h","containers":[{{"exitCode":137}}]}},"#,
                    r#"{{"node":"n2","runFor":"24h","containers":[{{"exitCode":137}}]}},"#,
                    r#"{{"node":"n3","runFor":"24h","outcome":"succeeded"}}]}}"#,
                    "\n"
                ),
                j = j
            )
        })
        .collect()
}

fn what_if(dir: &Path, history: &str) {
    std::fs::write(dir.join("old.yaml"), format!("{OLD}---\n{QUEUE}")).unwrap();
    std::fs::write(
        dir.join("new.yaml"),
        format!("{}---\n{QUEUE}", OLD.replace("retryLimit: 1", "retryLimit: 3")),
    )
    .unwrap();
    std::fs::write(dir.join("h.jsonl"), history).unwrap();
}

const PLAN: [&str; 7] = [
    "simulate",
    "-f",
    "new.yaml",
    "--baseline",
    "old.yaml",
    "--history",
    "h.jsonl",
];

/// 40 jobs of 1 TiB and 1,024 GPUs, three day-long runs each: every format prints, the GPU
/// hours are exact, and 1 to 4 shards merge to the bytes of one process.
#[test]
fn a_tebibyte_and_day_long_runs_fit_every_format_and_partial() {
    let dir = tempfile::tempdir().unwrap();
    what_if(dir.path(), &tebibyte_history(40));
    for format in ["table", "json", "yaml", "jsonl", "markdown", "html", "partial"] {
        let mut args = PLAN.to_vec();
        args.extend(["-o", format]);
        let out = run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "-o {format}: {}", format_output(&out));
        assert!(!out.stdout.is_empty(), "-o {format}");
    }
    let mut json = PLAN.to_vec();
    json.extend(["-o", "json"]);
    let out = run(dir.path(), &json);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The candidate's third run of each job: 40 × 24 h × 1,024 GPUs added.
    let compute = &v["comparison"]["compute"];
    assert_eq!(compute["gpuHours"]["added"], 40.0 * 24.0 * 1024.0, "{compute:#}");
    assert_eq!(compute["added"], "960h", "{compute:#}");
    for n in [1, 2, 4] {
        let partials = shards(dir.path(), &format!("t{n}"), &PLAN, n);
        for format in ["json", "table", "markdown"] {
            let mut args = PLAN.to_vec();
            // As `shards` runs them: the contention section is not summed in shards.
            args.extend(["-o", format, "--contention", "off"]);
            let whole = run(dir.path(), &args);
            merges_to(
                dir.path(),
                &whole,
                &partials,
                format,
                &format!("{n} shards, -o {format}"),
            );
        }
    }
}

/// Lookout's export of 20,000 jobs of 1 GiB and one CPU, three runs of 29 minutes each: one
/// process and 4 shards on a real PostgreSQL (each shard's partial past 64 bits of CPU time)
/// merge to the same bytes.
#[test]
fn a_lookout_export_past_64_bits_shards_and_merges_to_one_process() {
    let Some(mut db) = lookout_db("exact_wide") else { return };
    // Lookout's tables as the fixture writes them (testdata/lookout/lookout.sql): run state 4
    // failed, 3 succeeded; `job.cpu` in millicores.
    db.client
        .batch_execute(
            "INSERT INTO job (job_id, queue, owner, jobset, namespace, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, job_spec, priority_class, annotations)
             SELECT format('w-%s', lpad(i::text, 5, '0')), 'ml', 'alice', 'train', 'default', 1000, 1073741824, 0, 0, 1,
                    timestamp '2026-11-16 00:00:00' + i * interval '1 second', 5, timestamp '2026-11-16 00:00:00', 1794787200, NULL, 'armada-default', '{}'::jsonb
             FROM generate_series(1, 20000) AS i;
             INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, error, exit_code, pool, failure_category, failure_subcategory)
             SELECT format('00000000-0000-0000-%s-%s', lpad(r::text, 4, '0'), lpad(i::text, 12, '0')), format('w-%s', lpad(i::text, 5, '0')), 'c1', format('node-%s', r),
                    timestamp '2026-11-16 00:00:00' + i * interval '1 second' + (r * 30) * interval '1 minute',
                    timestamp '2026-11-16 00:00:00' + i * interval '1 second' + (r * 30) * interval '1 minute',
                    timestamp '2026-11-16 00:00:00' + i * interval '1 second' + (r * 30) * interval '1 minute',
                    timestamp '2026-11-16 00:00:00' + i * interval '1 second' + (r * 30 + 29) * interval '1 minute',
                    CASE WHEN r = 2 THEN 3 ELSE 4 END, NULL, CASE WHEN r = 2 THEN 0 ELSE 137 END, 'default', NULL, NULL
             FROM generate_series(1, 20000) AS i, generate_series(0, 2) AS r;
             UPDATE job SET latest_run_id = format('00000000-0000-0000-0002-%s', lpad(substr(job_id, 3), 12, '0')) WHERE job_id LIKE 'w-%';",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    what_if(dir.path(), "");
    let mut args = vec![
        "simulate",
        "-f",
        "new.yaml",
        "--baseline",
        "old.yaml",
        "--lookout-db",
        db.dsn.as_str(),
        "--queue",
        "ml",
    ];
    args.extend(WINDOW);
    let mut json = args.clone();
    // As `shards` runs them: the contention section is not summed in shards.
    json.extend(["-o", "json", "--contention", "off"]);
    let whole = run(dir.path(), &json);
    assert_eq!(whole.status.code(), Some(0), "{}", format_output(&whole));
    let v: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(v["comparison"]["jobs"], 20000, "{}", v["comparison"]);
    let partials = shards(dir.path(), "lk", &args, 4);
    for p in &partials {
        let text = std::fs::read_to_string(dir.path().join(p)).unwrap();
        let cpu = text
            .split("\"cpu\":")
            .skip(1)
            .filter_map(|s| s.split(|c: char| !c.is_ascii_digit()).next()?.parse::<u128>().ok())
            .max()
            .unwrap();
        assert!(cpu > u128::from(u64::MAX), "{p}: CPU time {cpu} is within 64 bits");
    }
    merges_to(dir.path(), &whole, &partials, "json", "4 Lookout shards, -o json");
    let mut table = args.clone();
    table.extend(["-o", "table", "--contention", "off"]);
    let whole = run(dir.path(), &table);
    merges_to(dir.path(), &whole, &partials, "table", "4 Lookout shards, -o table");
}

/// A sum of device time past 128 bits (4,100 runs of Go's longest duration on 2^53
/// thousandths of a GPU) is exit 3, naming the figure and the job; into `--output-file`,
/// nothing is written.
#[test]
fn a_sum_past_128_bits_is_refused_naming_the_figure_and_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let history: String = (0..4100)
        .map(|j| {
            format!(
                "{{\"job\":{{\"id\":\"absurd-{j}\",\"queue\":\"ml\",\"resources\":{{\"gpu\":\"9007199254740\"}}}},\"runs\":[{{\"runFor\":\"2562047h\",\"outcome\":\"succeeded\"}}]}}\n"
            )
        })
        .collect();
    what_if(dir.path(), &history);
    let out = run(
        dir.path(),
        &[
            "simulate",
            "-f",
            "old.yaml",
            "--history",
            "h.jsonl",
            "-o",
            "json",
            "--output-file",
            "out.json",
        ],
    );
    assert_eq!(
        exchange_of(&out),
        "exit: 3\n--- stdout\n--- stderr\nerror: job `absurd-4096`: the GPU time passes 340282366920938463463374607431768211455 nanoseconds × thousandths of a device (2^128 − 1), the most retryctl can add up; check the history's `runFor` and `resources`\n"
    );
    assert!(!dir.path().join("out.json").exists());
}

fn exchange_of(out: &std::process::Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Go's `\d`, `\s` and `\b` are ASCII, in a policy's `onTerminationMessage`: `٣` is no digit,
/// a no-break space no space, and there is no word boundary between `é` and a space.
#[test]
fn the_policy_matcher_reads_perl_classes_as_ascii() {
    let home = temp_home();
    let dir = home.path();
    std::fs::write(
        dir.join("p.yaml"),
        "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata: {name: p}
spec:
  retryLimit: 1
  defaultAction: Fail
  rules:
    - {action: Retry, onTerminationMessage: {pattern: '^code \\d$'}}
    - {action: Retry, onTerminationMessage: {pattern: 'no\\sspace'}}
    - {action: Retry, onTerminationMessage: {pattern: 'café\\b'}}
",
    )
    .unwrap();
    let job = |id: &str, message: &str| {
        format!(
            "{{\"job\":{{\"id\":\"{id}\"}},\"runs\":[{{\"containers\":[{{\"exitCode\":1,\"message\":\"{message}\"}}]}},{{\"outcome\":\"succeeded\"}}]}}\n"
        )
    };
    let history = [
        job("ascii-digit", "code 3"),
        job("arabic-digit", "code ٣"),
        job("ascii-space", "no space"),
        job("no-break-space", "no\u{a0}space"),
        job("accent-then-bang", "café!"),
        job("accent-at-end", "café"),
        job("accent-then-letter", "cafés"),
    ]
    .concat();
    std::fs::write(dir.join("h.jsonl"), history).unwrap();
    let out = retryctl(dir)
        .current_dir(dir)
        .args(["simulate", "-f", "p.yaml", "--history", "h.jsonl", "-o", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let outcomes: Vec<(String, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["job"].as_str().unwrap().to_string(),
                v["outcome"]["final"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("ascii-digit", "Succeeded"),
        ("arabic-digit", "Failed"),
        ("ascii-space", "Succeeded"),
        ("no-break-space", "Failed"),
        // Go: `é` is no word character, so no boundary sits between it and `!` or the end…
        ("accent-then-bang", "Failed"),
        ("accent-at-end", "Failed"),
        // …and one sits between it and the word character `s`.
        ("accent-then-letter", "Succeeded"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(outcomes, want);
}

/// The executor's categorizer reads its patterns as Go does: `\d` does not categorize `٣`,
/// `\s` not a no-break space (`onTerminationMessage`, `onPodError`, `onPodEvents`), under
/// `simulate --engine upstream --categorizer`.
#[test]
fn the_categorizer_reads_perl_classes_as_ascii() {
    let home = temp_home();
    let dir = home.path();
    std::fs::write(
        dir.join("categorizer.yaml"),
        "errorCategories:
  enabled: true
  defaultCategory: other
  categories:
    - name: digit
      rules:
        - onTerminationMessage: {pattern: 'code \\d'}
        - onPodError: {pattern: 'pull \\d'}
        - onPodEvents: {regexp: 'no\\sdevice', type: Warning}
",
    )
    .unwrap();
    std::fs::write(
        dir.join("p.yaml"),
        "apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: p
retryLimit: 1
defaultAction: Fail
rules:
  - {action: Retry, onCategory: digit}
",
    )
    .unwrap();
    let history = [
        r#"{"job":{"id":"message-ascii"},"runs":[{"containers":[{"exitCode":1,"message":"code 3"}]},{"outcome":"succeeded"}]}"#,
        r#"{"job":{"id":"message-arabic"},"runs":[{"containers":[{"exitCode":1,"message":"code ٣"}]},{"outcome":"succeeded"}]}"#,
        r#"{"job":{"id":"pod-error-ascii"},"runs":[{"podError":"pull 7 failed"},{"outcome":"succeeded"}]}"#,
        r#"{"job":{"id":"pod-error-arabic"},"runs":[{"podError":"pull ٧ failed"},{"outcome":"succeeded"}]}"#,
        r#"{"job":{"id":"event-space"},"runs":[{"events":[{"type":"Warning","reason":"X","message":"no device"}]},{"outcome":"succeeded"}]}"#,
        "{\"job\":{\"id\":\"event-no-break-space\"},\"runs\":[{\"events\":[{\"type\":\"Warning\",\"reason\":\"X\",\"message\":\"no\u{a0}device\"}]},{\"outcome\":\"succeeded\"}]}",
    ]
    .join("\n");
    std::fs::write(dir.join("h.jsonl"), history).unwrap();
    let out = retryctl(dir)
        .current_dir(dir)
        .args([
            "simulate",
            "-f",
            "p.yaml",
            "--engine",
            "upstream",
            "--categorizer",
            "categorizer.yaml",
            "--history",
            "h.jsonl",
            "-o",
            "jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let outcomes: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {}",
                v["job"].as_str().unwrap(),
                v["outcome"]["final"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            "message-ascii Succeeded",
            "message-arabic Failed",
            "pod-error-ascii Succeeded",
            "pod-error-arabic Failed",
            "event-space Succeeded",
            "event-no-break-space Failed",
        ]
    );
}

/// A pattern Go refuses is refused with Go's words: a flag Go does not have, a repetition
/// count past 1,000, stacked repetition operators (golang/go
/// `regexp/syntax/parse.go`'s `repeat`: "a** is a syntax error, not a doubled star"), each at
/// its rule's field and line.
#[test]
fn a_pattern_go_refuses_is_refused_with_gos_message() {
    let home = temp_home();
    let dir = home.path();
    std::fs::write(
        dir.join("p.yaml"),
        "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata: {name: p}
spec:
  rules:
    - {action: Retry, onTerminationMessage: {pattern: '(?x) a b'}}
    - {action: Retry, onTerminationMessage: {pattern: 'a{1001}'}}
    - {action: Retry, onTerminationMessage: {pattern: 'a**'}}
    - {action: Retry, onTerminationMessage: {pattern: 'a{2}{3}'}}
    - {action: Retry, onTerminationMessage: {pattern: 'a*??'}}
    - {action: Retry, onTerminationMessage: {pattern: '(?ii)a{01}(?i-i)\\p{^Greek}(?)'}}
",
    )
    .unwrap();
    let out = exchange(retryctl(dir).current_dir(dir).args(["validate", "-f", "p.yaml"]));
    for (line, pattern, words) in [
        (8, "a**", "invalid nested repetition operator: `**`"),
        (9, "a{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
        (10, "a*??", "invalid nested repetition operator: `*??`"),
    ] {
        let said = format!(
            "  error: {line}:55 spec.rules[{}].onTerminationMessage.pattern: invalid regular expression `{pattern}`: {words}\n",
            line - 6
        );
        assert!(out.contains(&said), "{said}in:\n{out}");
    }
    assert!(out.contains("5 errors"), "{out}");
    assert!(
        out.contains("invalid regular expression `(?x) a b`: invalid or unsupported Perl syntax: `(?x`"),
        "{out}"
    );
    assert!(
        out.contains("invalid regular expression `a{1001}`: invalid repeat count: `{1001}`"),
        "{out}"
    );
    assert!(out.starts_with("exit: 3\n"), "{out}");
}

/// `validate --upstream` refuses the action spellings armadactl refuses, with upstream's
/// message, and accepts the ones it accepts (pkg/api/deserialize_test.go).
#[test]
fn actions_are_what_upstreams_decoder_accepts() {
    let home = temp_home();
    let dir = home.path();
    let policy = |action: &str| {
        format!(
            "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 1\ndefaultAction: Fail\nrules:\n  - {{action: {action}, onCategory: oom}}\n"
        )
    };
    for accepted in [
        "Fail",
        "Retry",
        "FAIL",
        "retry",
        "RETRY_ACTION_FAIL",
        "RETRY_ACTION_RETRY",
        "1",
        "2",
    ] {
        std::fs::write(dir.join("p.yaml"), policy(accepted)).unwrap();
        let out = retryctl(dir)
            .current_dir(dir)
            .args(["validate", "--upstream", "-f", "p.yaml"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{accepted}: {}", format_output(&out));
    }
    for (refused, said) in [
        ("retry_action_fail", r#"no RetryAction of name "retry_action_fail""#),
        ("Retry_Action_Retry", r#"no RetryAction of name "Retry_Action_Retry""#),
        (r#""1""#, r#"no RetryAction of name "1""#),
        (r#"" Fail""#, r#"no RetryAction of name " Fail""#),
        ("3", "no RetryAction of value 3"),
        ("BANANAS", r#"no RetryAction of name "BANANAS""#),
    ] {
        std::fs::write(dir.join("p.yaml"), policy(refused)).unwrap();
        let out = exchange(
            retryctl(dir)
                .current_dir(dir)
                .args(["validate", "--upstream", "-f", "p.yaml"]),
        );
        assert!(out.starts_with("exit: 3\n"), "{refused}: {out}");
        assert!(
            out.contains(&format!("rules[0].action: {said}: expected `Retry` or `Fail`")),
            "{refused}: {out}"
        );
    }
}

/// Armada sets `preemption` itself (upstream #5155: `preemption/<type>`), as it sets
/// `internal`: a rule on it draws no "never assigns" warning.
#[test]
fn preemption_is_armadas_own_category() {
    let home = temp_home();
    let dir = home.path();
    std::fs::write(
        dir.join("p.yaml"),
        "apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: p
retryLimit: 1
defaultAction: Fail
rules:
  - {action: Retry, onCategory: preemption}
  - {action: Retry, onCategory: internal}
  - {action: Retry, onCategory: nowhere}
",
    )
    .unwrap();
    let config = root().join("testdata/categorizer/executor-config.yaml");
    let out = exchange(retryctl(dir).current_dir(dir).args([
        "validate",
        "-f",
        "p.yaml",
        "--categorizer",
        config.to_str().unwrap(),
    ]));
    assert!(!out.contains("`preemption`"), "{out}");
    assert!(!out.contains("`internal`"), "{out}");
    assert!(out.contains("never assigns category `nowhere`"), "{out}");
}

/// Go's regexp the rest of it: the executor's categorizer decides with what Go's
/// `regexp` reads (golang/go `regexp/syntax/parse.go`: `parseInt` refuses a leading zero, so
/// `{01}` is text; `parsePerlFlags` takes a flag set twice, set then cleared, or none;
/// `parseUnicodeClass` reads `\p{^Greek}` as `\P{Greek}`; a group nests 300 deep), under
/// `simulate --engine upstream --categorizer`.
#[test]
fn the_categorizer_decides_with_what_gos_regexp_reads() {
    let home = temp_home();
    let dir = home.path();
    let deep = format!("{}ok{}", "(".repeat(300), ")".repeat(300));
    std::fs::write(
        dir.join("categorizer.yaml"),
        format!(
            "errorCategories:
  enabled: true
  defaultCategory: other
  categories:
    - name: go
      rules:
        - onTerminationMessage: {{pattern: '^code x{{01}}$'}}
        - onTerminationMessage: {{pattern: '^(?i-i)late$'}}
        - onPodError: {{pattern: '^(?ii)pull(?) \\p{{^Greek}}+$'}}
        - onPodEvents: {{regexp: '^{deep}$', type: Warning}}
"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("p.yaml"),
        "apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: p
retryLimit: 1
defaultAction: Fail
rules:
  - {action: Retry, onCategory: go}
",
    )
    .unwrap();
    let job = |id: &str, run: &str| format!(r#"{{"job":{{"id":"{id}"}},"runs":[{run},{{"outcome":"succeeded"}}]}}"#);
    let message = |m: &str| format!(r#"{{"containers":[{{"exitCode":1,"message":"{m}"}}]}}"#);
    let history = [
        job("brace-text", &message("code x{01}")),
        job("one-x", &message("code x")),
        job("lower-late", &message("late")),
        job("upper-late", &message("LATE")),
        job("pull-latin", r#"{"podError":"PULL abc"}"#),
        job("pull-greek", r#"{"podError":"PULL αβγ"}"#),
        job(
            "deep-ok",
            r#"{"events":[{"type":"Warning","reason":"X","message":"ok"}]}"#,
        ),
        job(
            "deep-not",
            r#"{"events":[{"type":"Warning","reason":"X","message":"okay"}]}"#,
        ),
    ]
    .join("\n");
    std::fs::write(dir.join("h.jsonl"), history).unwrap();
    let out = retryctl(dir)
        .current_dir(dir)
        .args([
            "simulate",
            "-f",
            "p.yaml",
            "--engine",
            "upstream",
            "--categorizer",
            "categorizer.yaml",
            "--history",
            "h.jsonl",
            "-o",
            "jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let outcomes: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {}",
                v["job"].as_str().unwrap(),
                v["outcome"]["final"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            "brace-text Succeeded",
            "one-x Failed",
            "lower-late Succeeded",
            "upper-late Failed",
            "pull-latin Succeeded",
            "pull-greek Failed",
            "deep-ok Succeeded",
            "deep-not Failed",
        ]
    );
}
