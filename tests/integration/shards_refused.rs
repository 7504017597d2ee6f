//! What `merge` refuses (docs/past-one-machine.md "The partial file"), each in its exact
//! words: missing shards past a million, a pipe, a file left as it was, partials that are not
//! one whole run. The shards' helpers are `shards`'.

use std::fs;
use std::path::Path;

use super::shards::*;
use crate::simulate_report::{job, CUDA, OK};
use crate::support::{format_output, temp_home};
use crate::tune::sweep;

/// A partial that claims a million shards names the first ten missing and counts the rest
/// (without building a list of them); one that claims more is damaged: no retryctl writes
/// it. Both resealed, as an edit by hand would be.
#[test]
fn merge_names_ten_missing_shards_and_refuses_more_than_a_million() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let text = fs::read_to_string(d.join(&p[0])).unwrap();
    let claim = |count: &str, name: &str| {
        let edited = text.replacen(
            "\"shard\":{\"index\":0,\"count\":3}",
            &format!("\"shard\":{{\"index\":0,\"count\":{count}}}"),
            1,
        );
        assert_ne!(edited, text);
        fs::write(d.join(name), reseal(&edited)).unwrap();
        let out = run(d, &["merge", name]);
        assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
        assert!(out.stdout.is_empty());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert_eq!(
        claim("1000000", "million.json"),
        "error: shards 1/1000000, 2/1000000, 3/1000000, 4/1000000, 5/1000000, 6/1000000, 7/1000000, 8/1000000, 9/1000000, 10/1000000 and 999989 more are missing\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
    assert_eq!(
        claim("18446744073709551615", "huge.json"),
        "error: `huge.json` is damaged: its header's shard is 0/18446744073709551615, of more than 1000000 shards\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
}

/// A named pipe that serves a partial is refused at once (merge reads a partial's end
/// first, which a pipe cannot give; opening one to read it waits for a writer), exit 3,
/// nothing on stdout.
#[test]
fn merge_refuses_a_pipe() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 2);
    let fifo = d.join("pipe.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // No writer: merge must not wait for one (opening a pipe to read it would).
    assert_eq!(
        refused(d, &[&p[0], "pipe.json"]),
        "error: `pipe.json` is not a regular file: merge reads a partial from its end first, which a pipe or a device cannot give; write it to a file first\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
}

/// `merge ARGS` in `dir` with stdout a regular file that holds `before` and is written at
/// its end, and stderr a pipe (`merge … >> FILE` after `before` was written there): its exit
/// status, its stderr and the file's bytes after.
fn merge_into_a_file(dir: &Path, args: &[String], before: &str) -> (Option<i32>, String, String) {
    use std::io::{Seek, SeekFrom};
    let path = dir.join("merged.txt");
    fs::write(&path, before).unwrap();
    let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.seek(SeekFrom::End(0)).unwrap();
    let home = temp_home();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .current_dir(dir)
        .env_clear()
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .arg("merge")
        .args(args)
        .stdout(file)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, fs::read_to_string(&path).unwrap())
}

/// Into a regular file, merge writes its output as it comes (it holds it back otherwise,
/// until every partial is checked); a partial found damaged at its end then leaves the file
/// as it was before the merge, bytes for bytes: the same "nothing was printed".
#[test]
fn a_merge_into_a_file_leaves_it_as_it_was_when_refused() {
    // Enough changed jobs that most of the output is written to the file before the last
    // shard's end is read (more than the 256 KiB merge buffers).
    let mut h = history();
    // Ids of their own: a history holds each job once (`c1` is the report's).
    for i in 0..3_000 {
        h.push_str(&job(&format!("many{i}"), &[CUDA, OK]));
        h.push('\n');
    }
    let dir = what_if(&h);
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let whole = run(
        d,
        &PLAN
            .iter()
            .copied()
            .chain(["-o", "json", "--contention", "off"])
            .collect::<Vec<_>>(),
    );
    assert!(whole.stdout.len() > 512 << 10, "{} bytes", whole.stdout.len());
    let args = |last: &str| {
        vec![p[0].as_str(), p[1].as_str(), last, "-o", "json"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (code, stderr, file) = merge_into_a_file(d, &args(&p[2]), "kept\n");
    assert_eq!((code, stderr.as_bytes()), (Some(0), &whole.stderr[..]));
    assert!(
        file == format!("kept\n{}", String::from_utf8_lossy(&whole.stdout)),
        "the file after the merge"
    );
    // With `--output-file`, the output goes to that file (through its own), not to stdout's.
    let mut named = args(&p[2]);
    named.extend(["--output-file".into(), "named.json".into()]);
    let (code, stderr, file) = merge_into_a_file(d, &named, "kept\n");
    assert_eq!(
        (code, stderr.as_bytes(), file.as_str()),
        (Some(0), &whole.stderr[..], "kept\n")
    );
    assert!(
        fs::read(d.join("named.json")).unwrap() == whole.stdout,
        "--output-file's file"
    );
    // The last shard's last entry edited, not sealed again: found once merge has written
    // all but the end of the output.
    let text = fs::read_to_string(d.join(&p[2])).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let last = lines.len() - 2;
    let edited = lines[last].replacen("\"job\":\"", "\"job\":\"z", 1);
    assert_ne!(edited, lines[last]);
    lines[last] = &edited;
    fs::write(d.join("edited.json"), lines.join("\n") + "\n").unwrap();
    let refused = merge_into_a_file(d, &args("edited.json"), "kept\n");
    assert_eq!(
        refused,
        (
            Some(3),
            "error: `edited.json` is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)\nerror: cannot merge: 1 problem above (nothing was printed)\n".to_string(),
            "kept\n".to_string()
        )
    );
}

/// Every refusal, each file named with what is wrong, nothing on stdout, exit 3.
#[test]
fn merge_refuses_what_is_not_one_whole_run() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let refused = |files: &[&str], want: &str| assert_eq!(refused(d, files), want, "{files:?}");
    let (p0, p1, p2) = (p[0].as_str(), p[1].as_str(), p[2].as_str());
    refused(
        &[p0, p2],
        "error: shard 1/3 is missing\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    refused(
        &[p0, p1, p1, p2],
        "error: shard 1/3 is given 2 times: `p-1.json`, `p-1.json`\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Another N.
    let q = shards(d, "q", &PLAN, 2);
    refused(
        &[p0, p1, p2, &q[1]],
        "error: `q-1.json` is shard 1/2 and `p-0.json` shard 0/3: the shards of one run share N\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Another run: other flags.
    let mut other = PLAN.to_vec();
    other.push("--all-changes");
    let o = shards(d, "o", &other, 3);
    refused(
        &[p0, &o[1], p2],
        "error: `o-1.json` is of another run than `p-0.json`: its documents, flags or source differ (its fingerprint is not the same)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Another history under the same name.
    let keep = fs::read(d.join("h.jsonl")).unwrap();
    fs::write(d.join("h.jsonl"), history().replace("cuda5", "cuda6")).unwrap();
    let a = shards(d, "a", &PLAN, 3);
    fs::write(d.join("h.jsonl"), keep).unwrap();
    refused(
        &[p0, p1, &a[2]],
        "error: `a-2.json` was made from another history than `p-0.json` (the history's digest differs: was it changed between the shards?)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Not a partial, truncated, newer: each file on its own.
    let whole = run(d, &PLAN.iter().copied().chain(["-o", "json"]).collect::<Vec<_>>());
    fs::write(d.join("plan.json"), &whole.stdout).unwrap();
    let text = fs::read_to_string(d.join(p1)).unwrap();
    fs::write(d.join("cut.json"), &text[..text.len() / 2]).unwrap();
    fs::write(
        d.join("newer.json"),
        text.replacen("\"version\":6,", "\"version\":7,", 1),
    )
    .unwrap();
    let entries = text.lines().count() - 2;
    refused(
        &[p0, "plan.json", "cut.json", "newer.json"],
        &format!(
            "error: `plan.json` is not a retryctl partial result (one begins with `{{\"partial\":\"retryctl\"`; `simulate … -o partial` writes them)\n\
             error: `cut.json` is truncated: it ends after {} entries without its end (was its shard cut short?)\n\
             error: `newer.json` was written by a newer retryctl (partial version 7; this one reads version 6): merge with that retryctl\n\
             error: cannot merge: 3 problems above (nothing was printed)\n",
            text[..text.len() / 2].matches('\n').count() - 1
        ),
    );
    assert!(entries > 3);
    // Another retryctl: the header says which wrote it.
    let ours = env!("CARGO_PKG_VERSION");
    fs::write(
        d.join("old-build.json"),
        reseal(&text.replacen(&format!("\"retryctl\":\"{ours}\""), "\"retryctl\":\"0.0.1\"", 1)),
    )
    .unwrap();
    refused(
        &[p0, "old-build.json", p2],
        &format!("error: `old-build.json` was written by retryctl 0.0.1 and `p-0.json` by retryctl {ours}: make every shard with one retryctl\nerror: cannot merge: 1 problem above (nothing was printed)\n"),
    );
    // A damaged entry is found as the merge reads it: still nothing on stdout.
    let lines: Vec<&str> = text.lines().collect();
    let mut broken = lines.clone();
    // Its place in the source kept (entries must stay in order), its change made garbage.
    let at = &lines[2][..lines[2].find("],").unwrap() + 1];
    let garbage = format!("{at},\"change\":{{\"diff\":7}}}},");
    broken[2] = &garbage;
    fs::write(d.join("broken.json"), reseal(&(broken.join("\n") + "\n"))).unwrap();
    let out = run(d, &["merge", p0, "broken.json", p2, "-o", "json"]);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.ends_with(&format!("error: `broken.json` is damaged: entry 2: unknown field `diff`, expected one of `job`, `baseline`, `candidate`, `transition`, `computeAdded`, `computeRemoved` at line 1 column {}\n\
             error: cannot merge: 1 problem above (nothing was printed)\n", garbage.find("\"diff\"").unwrap() + 6)),
        "{err}"
    );
    // Edited by hand: a count in the totals made larger. Refused, whatever it changed.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen("\"errors\":0", "\"errors\":1", 1);
    assert_ne!(lines[last], text.lines().last().unwrap());
    fs::write(d.join("edited.json"), lines.join("\n") + "\n").unwrap();
    refused(
        &[p0, "edited.json", p2],
        "error: `edited.json` is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // An entry edited, not sealed again, that still reads: found by the seal once the
    // entries are read (a partial is read once), said in the same words, and nothing the
    // fold said of that file is printed.
    let lines: Vec<&str> = text.lines().collect();
    let mut job_edited = lines.clone();
    let edited_entry = lines[1].replacen("\"job\":\"", "\"job\":\"z", 1);
    assert_ne!(edited_entry, lines[1]);
    job_edited[1] = &edited_entry;
    fs::write(d.join("entry-edited.json"), job_edited.join("\n") + "\n").unwrap();
    refused(
        &[p0, "entry-edited.json", p2],
        "error: `entry-edited.json` is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // An entry its command never writes, in a file sealed again: named, not trusted.
    let tune = shards(d, "t", &sweep("new"), 1);
    let tune_text = fs::read_to_string(d.join(&tune[0])).unwrap();
    let mut tune_lines: Vec<&str> = tune_text.lines().collect();
    let held = tune_lines.len() - 2;
    let change = format!("{},", lines[1].trim_end_matches(','));
    let last = tune_lines.len() - 1;
    let end = tune_lines[last].replacen(&format!("\"entries\":{held}"), &format!("\"entries\":{}", held + 1), 1);
    tune_lines[last] = &end;
    assert!(held > 0, "the change goes before an entry: {tune_text}");
    tune_lines.insert(1, &change);
    fs::write(d.join("foreign.json"), reseal(&(tune_lines.join("\n") + "\n"))).unwrap();
    let out = run(d, &["merge", "foreign.json"]);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: `foreign.json` is damaged: it holds a changed job, which a partial of `tune` never holds\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
    // A missing file.
    refused(
        &[p0, "nowhere.json", p2],
        "error: `nowhere.json` cannot be read: no such file or directory\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
}
