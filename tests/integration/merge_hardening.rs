//! `merge` against partials edited and sealed again (their seal is a SHA-256 anyone can
//! compute), and against the machine's limits (docs/past-one-machine.md): numbers that
//! cannot be true, counts that would overflow when added, a job another shard replays,
//! candidates' tallies the header does not name, settings that differ between partials, a
//! suggest signature whose text is not its structure's; links in a directory of partials;
//! too many files open (a limit, exit 1, not invalid input) and a merge in rounds under a
//! low `ulimit -n`. Every refusal: exit 3 (1 for the limit), nothing on stdout, the full
//! stderr ending with the closing `cannot merge` line.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::shards::{history, merges_to, refused, reseal, run, shards, what_if, PLAN};
use crate::support::format_output;
use crate::tune::sweep;

const CLOSING: &str = "error: cannot merge: 1 problem above (nothing was printed)\n";

/// A partial's end line as JSON (`],"end":{…}` without the seal), edited by `edit`, put
/// back and sealed again.
fn edit_end(text: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let last = lines.len() - 1;
    let line = &lines[last];
    let body = &line["],\"end\":".len()..line.rfind(",\"xxh3\":\"").unwrap()];
    let mut end: serde_json::Value = serde_json::from_str(body).unwrap();
    edit(&mut end);
    lines[last] = format!("],\"end\":{end},\"xxh3\":\"\"}}");
    reseal(&(lines.join("\n") + "\n"))
}

/// Every number named `name` in `v`, added up (what merge adds for that field).
fn sum_named(v: &serde_json::Value, name: &str) -> u128 {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, x)| match x {
                serde_json::Value::Number(n) if k == name => u128::from(n.as_u64().unwrap_or(0)),
                _ if k == name => sum_named_items(x),
                _ => sum_named(x, name),
            })
            .sum(),
        serde_json::Value::Array(items) => items.iter().map(|x| sum_named(x, name)).sum(),
        _ => 0,
    }
}

fn sum_named_items(v: &serde_json::Value) -> u128 {
    match v {
        serde_json::Value::Number(n) => u128::from(n.as_u64().unwrap_or(0)),
        serde_json::Value::Array(items) => items.iter().map(sum_named_items).sum(),
        _ => 0,
    }
}

/// A partial's end (its totals) as JSON.
fn end_of(text: &str) -> serde_json::Value {
    let line = text.lines().last().unwrap();
    serde_json::from_str(&line["],\"end\":".len()..line.rfind(",\"xxh3\":\"").unwrap()]).unwrap()
}

/// A resealed plan whose trials count more successes than trials: refused by name, with
/// where in its totals.
#[test]
fn successes_above_trials_are_refused() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    // A shard with trials at depth 1 (which one depends on how the bytes split).
    let k = (0..3)
        .find(|&k| {
            end_of(&fs::read_to_string(d.join(&p[k])).unwrap())["totals"]["trials"]["trials"]["all"]["train"][0]
                ["trials"]
                .as_u64()
                > Some(0)
        })
        .unwrap();
    let text = fs::read_to_string(d.join(&p[k])).unwrap();
    let mut trials = 0;
    let edited = edit_end(&text, |end| {
        let tally = &mut end["totals"]["trials"]["trials"]["all"]["train"][0];
        trials = tally["trials"].as_u64().unwrap();
        tally["successes"] = (trials + 1).into();
    });
    assert!(trials > 0, "{text}");
    fs::write(d.join("lucky.json"), edited).unwrap();
    let mut files: Vec<&str> = p.iter().map(String::as_str).collect();
    files[k] = "lucky.json";
    assert_eq!(
        refused(d, &files),
        format!(
            "error: `lucky.json` is damaged: its totals' `trials.trials.all.train[0]` count {} successes in {trials} trials (successes are trials that succeeded)\n{CLOSING}",
            trials + 1
        )
    );
}

/// A resealed plan whose comparison counts more changed jobs than jobs (the reports print
/// the difference as unchanged): refused, not subtracted past zero.
#[test]
fn more_changed_jobs_than_jobs_are_refused() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let text = fs::read_to_string(d.join(&p[2])).unwrap();
    let mut jobs = 0;
    let edited = edit_end(&text, |end| {
        let comparison = &mut end["totals"]["tally"]["comparison"];
        jobs = comparison["jobs"].as_u64().unwrap();
        comparison["changed"] = (jobs + 1).into();
    });
    fs::write(d.join("changed.json"), edited).unwrap();
    assert_eq!(
        refused(d, &[&p[0], &p[1], "changed.json"]),
        format!(
            "error: `changed.json` is damaged: its totals' `tally.comparison` count {} changed jobs of {jobs} jobs (changed jobs are among the jobs)\n{CLOSING}",
            jobs + 1
        )
    );
}

/// Counts that overflow when added: one partial's own (a count at the top of `u64` beside
/// others of its name), and two partials' together. Refused, never wrapped or a panic.
#[test]
fn counts_that_overflow_when_added_are_refused() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let max = u64::MAX;
    // The comparison's `jobs` set to `value`: what `jobs` then adds up to in the partial.
    let jobs_at = |name: &str, source: &str, value: u64| -> u128 {
        let text = fs::read_to_string(d.join(source)).unwrap();
        let edited = edit_end(&text, |end| {
            end["totals"]["tally"]["comparison"]["jobs"] = value.into();
        });
        fs::write(d.join(name), &edited).unwrap();
        sum_named(&end_of(&edited)["totals"], "jobs")
    };
    // Alone: `jobs` is counted in the comparison and in each side, and adds up past u64.
    jobs_at("alone-0.json", &p[0], max);
    assert_eq!(
        refused(d, &["alone-0.json", &p[1], &p[2]]),
        format!("error: `alone-0.json` is damaged: its totals' `jobs` add up to more than {max}, more than a count can hold\n{CLOSING}")
    );
    // Every file's problem is said.
    jobs_at("alone-1.json", &p[1], max);
    assert_eq!(
        refused(d, &["alone-0.json", "alone-1.json", &p[2]]),
        format!(
            "error: `alone-0.json` is damaged: its totals' `jobs` add up to more than {max}, more than a count can hold\n\
             error: `alone-1.json` is damaged: its totals' `jobs` add up to more than {max}, more than a count can hold\n\
             error: cannot merge: 2 problems above (nothing was printed)\n"
        )
    );
    // Together: each partial's fits, their sum does not; the partial that holds the larger
    // part is named, whichever comes first (which one holds it follows the jobs each shard
    // drew, counted in more than the comparison's `jobs`).
    let a = jobs_at("half-0.json", &p[0], max / 2);
    let b = jobs_at("half-1.json", &p[1], max / 2);
    let ((larger, first), (smaller, second)) = match a > b {
        true => (("half-0.json", a), ("half-1.json", b)),
        false => (("half-1.json", b), ("half-0.json", a)),
    };
    assert!(first <= u128::from(max) && second <= u128::from(max) && first + second > u128::from(max));
    assert!(first > second, "{first} {second}");
    assert_eq!(
        refused(d, &[larger, smaller, &p[2]]),
        format!(
            "error: `{larger}` is damaged: its totals' `jobs` ({first} in all) and the other partials' ({second}) add up to more than {max}, more than a count can hold\n{CLOSING}"
        )
    );
    assert_eq!(
        refused(d, &[smaller, larger, &p[2]]),
        format!(
            "error: `{larger}` is damaged: its totals' `jobs` ({first} in all) and the partials' before it ({second}) add up to more than {max}, more than a count can hold\n{CLOSING}"
        )
    );
}

/// A job listed in a partial whose shard does not replay it (another shard's entry copied in,
/// the file sealed again): refused as damaged, naming the entry, the job and the partial that
/// holds it too. Whatever the rule that split the source, a place in it is one shard's.
#[test]
fn a_job_another_shard_owns_is_refused() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let first = fs::read_to_string(d.join(&p[0])).unwrap();
    let second = fs::read_to_string(d.join(&p[1])).unwrap();
    // Shard 0's last entry goes first in shard 1's (its place is before all of shard 1's).
    let lines: Vec<&str> = first.lines().collect();
    let last = lines[lines.len() - 2];
    assert!(last.starts_with("{\"at\":"), "{last}");
    let last = format!("{},", last.trim_end_matches(','));
    let id = last
        .split("\"change\":{\"job\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let mut theirs: Vec<&str> = second.lines().collect();
    theirs.insert(1, &last);
    let stray = edit_end(&(theirs.join("\n") + "\n"), |end| {
        end["entries"] = (end["entries"].as_u64().unwrap() + 1).into();
    });
    fs::write(d.join("stray.json"), stray).unwrap();
    // Found as the merge reads it: shard 0's messages before it are said.
    let err = refused(d, &[&p[0], "stray.json", &p[2]]);
    let want = format!(
        "error: `stray.json` is damaged: entry 1: job `{id}` is also in `{}`, at the same place in the history (another shard replays it)\n{CLOSING}",
        p[0]
    );
    assert!(err.ends_with(&want), "{err}");
}

/// A sweep's partial whose totals hold fewer candidates' tallies than its header names.
#[test]
fn candidate_tallies_that_disagree_with_the_header_are_refused() {
    let dir = what_if(&history());
    let d = dir.path();
    let t = shards(d, "t", &sweep("new"), 2);
    let text = fs::read_to_string(d.join(&t[1])).unwrap();
    let mut named = 0;
    let edited = edit_end(&text, |end| {
        let arms = end["totals"]["arms"].as_array_mut().unwrap();
        named = arms.len();
        arms.pop();
    });
    assert!(named > 1);
    fs::write(d.join("short.json"), edited).unwrap();
    assert_eq!(
        refused(d, &[&t[0], "short.json"]),
        format!(
            "error: `short.json` is damaged: its totals' `arms` hold {} candidates' tallies, and its header's `run.ids` names {named} candidates\n{CLOSING}",
            named - 1
        )
    );
}

/// A setting of the run (the header's `run`) edited in one partial and sealed again: the
/// fingerprint is the same, the settings are not. Refused naming both files and the field,
/// whichever partial comes first.
#[test]
fn run_settings_are_compared_across_every_partial() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let text = fs::read_to_string(d.join(&p[2])).unwrap();
    let edited = text.replacen("\"exitCode\":false", "\"exitCode\":true", 1);
    assert_ne!(edited, text);
    fs::write(d.join("exit.json"), reseal(&edited)).unwrap();
    assert_eq!(
        refused(d, &[&p[0], &p[1], "exit.json"]),
        format!(
            "error: `exit.json` and `p-0.json` do not hold the same run: their headers' `run.exitCode` differ: `true` in `exit.json`, `false` in `p-0.json` (the shards of one run share every setting: was one edited?)\n{CLOSING}"
        )
    );
    // The edited partial first: the others are each named against it.
    assert_eq!(
        refused(d, &["exit.json", &p[0], &p[1]]),
        "error: `p-0.json` and `exit.json` do not hold the same run: their headers' `run.exitCode` differ: `false` in `p-0.json`, `true` in `exit.json` (the shards of one run share every setting: was one edited?)\n\
         error: `p-1.json` and `exit.json` do not hold the same run: their headers' `run.exitCode` differ: `false` in `p-1.json`, `true` in `exit.json` (the shards of one run share every setting: was one edited?)\n\
         error: cannot merge: 2 problems above (nothing was printed)\n"
    );
    // A tune partial's list of candidates: named, too long to show.
    let t = shards(d, "t", &sweep("new"), 2);
    let text = fs::read_to_string(d.join(&t[1])).unwrap();
    let edited = text.replacen("\"ids\":[[1,", "\"ids\":[[7,", 1);
    assert_ne!(edited, text);
    fs::write(d.join("ids.json"), reseal(&edited)).unwrap();
    assert_eq!(
        refused(d, &[&t[0], "ids.json"]),
        format!("error: `ids.json` and `t-0.json` do not hold the same run: their headers' `run.ids` differ (the shards of one run share every setting: was one edited?)\n{CLOSING}")
    );
}

/// `sh -c 'ulimit -n LIMIT; retryctl merge FILES… -o FORMAT'` in `dir`.
fn merge_under_limit(dir: &Path, limit: u32, files: &[String], format: &str) -> Output {
    let home = crate::support::temp_home();
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let mut cmd = std::process::Command::new("sh");
    cmd.current_dir(dir)
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" merge \"$@\""))
        .arg(bin)
        .args(files)
        .args(["-o", format]);
    cmd.output().unwrap()
}

/// Under `ulimit -n 20`, 30 partials merge in rounds (a few open at once, through
/// temporary files) to one process's bytes; under a limit too low for any round, merge
/// says so and exits 1 with what to do, not 3: the input is not at fault.
#[test]
fn a_low_limit_of_open_files_merges_in_rounds_or_says_so() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 30);
    for format in ["table", "json"] {
        let mut one = PLAN.to_vec();
        one.extend(["-o", format, "--contention", "off"]);
        let whole = run(d, &one);
        let merged = merge_under_limit(d, 20, &p, format);
        assert_eq!(
            String::from_utf8_lossy(&merged.stdout),
            String::from_utf8_lossy(&whole.stdout),
            "{format}"
        );
        assert_eq!(
            String::from_utf8_lossy(&merged.stderr),
            String::from_utf8_lossy(&whole.stderr),
            "{format}"
        );
        assert_eq!(merged.status.code(), whole.status.code(), "{format}");
        // And without the limit, in one round.
        merges_to(d, &whole, &p, format, "30 shards");
    }
    let out = merge_under_limit(d, 5, &p, "table");
    assert_eq!(out.status.code(), Some(1), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    // Which partial meets the limit depends on the descriptors the process inherits (a
    // test harness's): one of them, named.
    let err = String::from_utf8_lossy(&out.stderr);
    let name = err.split('`').nth(1).unwrap_or_default();
    assert!(p.iter().any(|f| f == name), "{err}");
    assert_eq!(
        err,
        format!(
            "error: `{name}` cannot be opened: too many files are open (this process may open 5)\n\
             error: cannot merge: 1 problem above (nothing was printed)\n\
             \n\
             hint: raise the limit of open files (`ulimit -n 1024`) and merge again: merge keeps at most 256 partials open at once, and fewer under a lower limit\n"
        )
    );
}

/// `merge DIR` reads every partial of a directory, by name: one process's bytes; a file that
/// is no partial is said and skipped, a hidden one (a result still being written) left out;
/// a directory of none is refused.
#[test]
fn a_directory_of_partials_merges_to_one_process() {
    let dir = what_if(&history());
    let d = dir.path();
    std::fs::create_dir(d.join("parts")).unwrap();
    let mut plan = PLAN.to_vec();
    plan.extend(["-o", "json", "--contention", "off"]);
    let whole = run(d, &plan);
    let p = shards(d, "p", &PLAN, 3);
    for name in &p {
        fs::rename(d.join(name), d.join("parts").join(name)).unwrap();
    }
    fs::write(d.join("parts/result.json"), "{}\n").unwrap();
    fs::write(d.join("parts/.p-9.json.tmp"), "half").unwrap();
    let out = run(d, &["merge", "parts", "-o", "json"]);
    assert_eq!(out.status.code(), whole.status.code());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&whole.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "note: skipped `parts/result.json`: not a partial result\n{}",
            String::from_utf8_lossy(&whole.stderr)
        )
    );
    fs::create_dir(d.join("empty")).unwrap();
    let out = run(d, &["merge", "empty"]);
    assert_eq!(
        crate::support::format_output(&out),
        "exit: 3\n--- stdout\n--- stderr\nerror: no partial results in the directory `empty` (`simulate … --shard I/N -o partial` writes them)\n"
    );
}

/// A symbolic link in `merge DIR` is followed to its partial, wherever it is (the merge is
/// one process's bytes); a broken link and a link to a directory are each said and skipped,
/// never silently missing.
#[cfg(unix)]
#[test]
fn a_directory_of_links_to_partials_merges_and_says_what_it_skips() {
    use std::os::unix::fs::symlink;
    let dir = what_if(&history());
    let d = dir.path();
    let mut plan = PLAN.to_vec();
    plan.extend(["-o", "json", "--contention", "off"]);
    let whole = run(d, &plan);
    let p = shards(d, "p", &PLAN, 3);
    fs::create_dir(d.join("parts")).unwrap();
    // Shard 0 in the directory itself, shards 1 and 2 outside it through links (one relative,
    // one absolute).
    fs::rename(d.join(&p[0]), d.join("parts").join(&p[0])).unwrap();
    symlink(format!("../{}", p[1]), d.join("parts").join(&p[1])).unwrap();
    symlink(d.join(&p[2]), d.join("parts").join(&p[2])).unwrap();
    symlink("../gone.json", d.join("parts/q-broken.json")).unwrap();
    symlink("..", d.join("parts/q-up")).unwrap();
    // A name and a target with terminal escapes: shown escaped, never sent to the terminal.
    symlink("../\u{1b}[2Jgone", d.join("parts/q-\u{1b}[Abad")).unwrap();
    let out = run(d, &["merge", "parts", "-o", "json"]);
    assert_eq!(out.status.code(), whole.status.code(), "{}", format_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&whole.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "note: skipped `parts/q-\\x1b[Abad`: a symbolic link to `../\\x1b[2Jgone`, which does not exist\n\
             note: skipped `parts/q-broken.json`: a symbolic link to `../gone.json`, which does not exist\n\
             note: skipped `parts/q-up`: a symbolic link to `..`, a directory\n{}",
            String::from_utf8_lossy(&whole.stderr)
        )
    );
}

/// A suggest partial's signature is keyed by its text and written as a rule from its
/// structure: a text its structure does not print (resealed by hand) is damaged, exit 3.
#[test]
fn a_signature_whose_text_is_not_its_structures_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = crate::support::root().join("testdata/suggest");
    fs::copy(data.join("planted.jsonl"), d.join("h.jsonl")).unwrap();
    fs::copy(data.join("today.yaml"), d.join("today.yaml")).unwrap();
    let p = shards(
        d,
        "s",
        &["suggest", "--history", "h.jsonl", "--baseline", "today.yaml"],
        2,
    );
    let text = fs::read_to_string(d.join(&p[0])).unwrap();
    let from =
        r#"{"text":"exit:1@main \"ValueError: unknown config key 'lr<n>'\"","signature":{"container":{"exit":1,"#;
    assert_eq!(text.matches(from).count(), 1, "the shard's first signature");
    let edited = text.replace(from, &from.replacen("exit:1@", "exit:2@", 1));
    fs::write(d.join(&p[0]), reseal(&edited)).unwrap();
    assert_eq!(
        refused(d, &["s-0.json", "s-1.json"]),
        format!(
            "error: `s-0.json` is damaged: its totals' signature 0: its text `exit:2@main \"ValueError: unknown config key 'lr<n>'\"` is not its structure's (its structure prints `exit:1@main \"ValueError: unknown config key 'lr<n>'\"`)\n{CLOSING}"
        )
    );
}

/// A history whose every line is unreadable: each shard writes its partial (exit 0), and the
/// merge prints what one process prints, each line's diagnostic with its file, line and
/// reason, then the error, exit 3: for `simulate`, `tune` and `suggest` alike.
#[test]
fn shards_of_a_history_of_unreadable_lines_merge_to_one_processs_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("bad.jsonl"),
        "not json\n{\"job\":\n[1,2]\n{\"apiVersion\":\"armadaproject.io/v1\",\"kind\":\"FailureHistory\",\"job\":{\"id\":\"a\"},\"runs\":\"x\"}\n",
    )
    .unwrap();
    fs::create_dir(dir.path().join("new")).unwrap();
    fs::copy("testdata/lookout/new/policy.yaml", dir.path().join("new/policy.yaml")).unwrap();
    let verbs: [&[&str]; 3] = [
        &["simulate", "-f", "new", "--history", "bad.jsonl"],
        &[
            "tune",
            "-f",
            "new",
            "--vary",
            "ml-new:spec.retryLimit=1..2",
            "--history",
            "bad.jsonl",
        ],
        &["suggest", "--history", "bad.jsonl"],
    ];
    for args in verbs {
        let whole = run(dir.path(), args);
        assert_eq!(whole.status.code(), Some(3), "{args:?}: {}", format_output(&whole));
        let err = String::from_utf8_lossy(&whole.stderr);
        assert!(
            err.starts_with(
                "error: bad.jsonl:1: invalid JSON at column 2: expected ident\n\
                 error: bad.jsonl:2: invalid JSON at column 7: EOF while parsing a value\n\
                 error: bad.jsonl:3: expected a JSON object (one FailureHistory per line)\n\
                 error: bad.jsonl:4: runs: expected a list, found the quoted string `x`\n"
            ),
            "{args:?}: {err}"
        );
        let partials = shards(dir.path(), args[0], args, 2);
        let mut merge = vec!["merge"];
        merge.extend(partials.iter().map(String::as_str));
        let merged = run(dir.path(), &merge);
        assert_eq!(format_output(&merged), format_output(&whole), "{args:?}");
    }
}

/// A device-time sum past 2^128 − 1 (GPU time, nanoseconds × thousandths of a device), forged
/// into one partial and sealed again: the partial that holds the impossible number is named,
/// whichever order the partials are given in, never the one whose number is the history's.
#[test]
fn a_device_time_past_2_128_names_the_partial_that_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = env!("CARGO_MANIFEST_DIR");
    let (candidate, baseline, week) = (
        format!("{root}/testdata/route/suggested.yaml"),
        format!("{root}/testdata/route/current/"),
        format!("{root}/testdata/route/week.jsonl"),
    );
    let args = [
        "simulate",
        "-f",
        &candidate,
        "--baseline",
        &baseline,
        "--history",
        &week,
    ];
    let p = shards(d, "gpu", &args, 2);
    let text = fs::read_to_string(d.join(&p[0])).unwrap();
    let field = "\"gpu_removed\":";
    let at = text.rfind(field).unwrap() + field.len();
    let end = at + text[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    let honest: u128 = text[at..end].parse().unwrap();
    assert!(honest > 0, "the week's GPU jobs are retried differently");
    let forged = format!("{}{}{}", &text[..at], u128::MAX - 1, &text[end..]);
    fs::write(d.join("forged.json"), reseal(&forged)).unwrap();
    for order in [["forged.json", p[1].as_str()], [p[1].as_str(), "forged.json"]] {
        let err = refused(d, &order);
        assert!(err.starts_with("error: `forged.json` is damaged: "), "{order:?}: {err}");
        assert!(!err.contains(&format!("`{}`", p[1])), "{order:?}: {err}");
    }
}

/// What the merge adds up or indexes by, resealed out of what a shard can write: a
/// decision's rule past the rules a policy has, a window's change at a step no time has, of
/// a count no jobs make, of a name past the partial's names. Each refused as damaged, exit
/// 3, never an overflow, a table of that many slots or an index out of bounds.
#[test]
fn rules_and_window_changes_no_shard_writes_are_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir(d.join("new")).unwrap();
    fs::copy("testdata/policies/valid/infra.yaml", d.join("new/infra.yaml")).unwrap();
    let h: String = (0..4)
        .map(|i| {
            format!(
                "{{\"job\":{{\"id\":\"j{i}\",\"queue\":\"q\",\"submittedAt\":\"2026-11-0{}T10:00:00Z\"}},\"runs\":[{{\"node\":\"n{i}\",\"runFor\":\"1h\",\"conditions\":[\"Preempted\"]}},{{\"runFor\":\"1h\",\"outcome\":\"succeeded\"}}]}}\n",
                i + 1
            )
        })
        .collect();
    fs::write(d.join("h.jsonl"), h).unwrap();
    let p = shards(d, "r", &["simulate", "-f", "new", "--history", "h.jsonl"], 2);
    let text = fs::read_to_string(d.join(&p[0])).unwrap();
    let damaged = |edited: String, why: &str| {
        fs::write(d.join("bad.json"), reseal(&edited)).unwrap();
        let said = refused(d, &["bad.json", &p[1]]);
        assert!(
            said.starts_with(&format!("error: `bad.json` is damaged: {why}")),
            "{said}"
        );
        assert!(said.ends_with(CLOSING), "{said}");
    };
    assert!(text.contains("\"rule\":{\"Index\":0}"), "{text}");
    damaged(
        text.replacen("\"rule\":{\"Index\":0}", "\"rule\":{\"Index\":4294967295}", 1),
        "entry 1: run 0's decision names rule `4294967295`, past the 100 rules a policy can have",
    );
    // The detector's changes (`[step, change]`) and a mix's (`[name, step, change]`).
    let end = end_of(&text).to_string();
    let changes = "\"detector\":{\"deltas\":[[";
    let detector = end.find(changes).expect("the detector's changes") + changes.len();
    let step = &end[detector..detector + end[detector..].find(',').unwrap()];
    let edit = |from: &str, to: &str| {
        assert!(end.contains(from), "{from} in {end}");
        edit_end(&text, |e| {
            *e = serde_json::from_str(&end.replacen(from, to, 1)).unwrap()
        })
    };
    let at = format!("\"detector\":{{\"deltas\":[[{step},");
    damaged(
        edit(&at, "\"detector\":{\"deltas\":[[-9223372036854775808,"),
        "its end: a window's change at step `-9223372036854775808`, which no time has",
    );
    damaged(
        edit(&format!("{at}1]"), &format!("{at}9223372036854775807]")),
        "its end: a window's change of `9223372036854775807`, which no count of jobs makes",
    );
    damaged(
        edit(&format!("{at}1]"), &format!("{at}2]")),
        "its end: a window's count that never ends (after step `",
    );
    let names = end.find("\"failingJobs\":").expect("a mix's names");
    let deltas = names + end[names..].find("\"deltas\":[[").unwrap() + "\"deltas\":[[".len();
    let id = &end[deltas..deltas + end[deltas..].find(',').unwrap()];
    let mut edited = end.clone();
    edited.replace_range(deltas..deltas + id.len(), "4294967295");
    damaged(
        edit_end(&text, |e| *e = serde_json::from_str(&edited).unwrap()),
        "its end: a window's change of name `4294967295`, past the",
    );
}
