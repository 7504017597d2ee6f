use super::entry::*;
use super::format::*;
use super::read::*;
use super::write::*;

use std::io::Write;
use std::sync::atomic::Ordering;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{Final, Outcome};
use crate::replay::compare::{JobDiff, RunStep, Side, Step, Steps, Transition};
use crate::replay::estimate::FailureClass;
use crate::replay::fallback::Fallback;
use crate::replay::shard::Shard;
use crate::replay::sink::Change;
use crate::replay::source::Pos;
use crate::replay::spool::Changed;

fn header(shard: Shard) -> Header {
    Header::new(shard, "f".repeat(64), serde_json::json!({"command": "simulate"}))
}

fn written(entries: impl FnOnce(&mut Recorder<'_>)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rec = Recorder::new(
        &mut out,
        &header(Shard { index: 1, count: 3 }),
        |f| f.name.clone(),
        crate::output::records::render_change,
    )
    .unwrap();
    entries(&mut rec);
    rec.end(Some(0xabc), serde_json::json!({"n": 1}), None).unwrap();
    out
}

fn file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    f
}

/// A partial opened and its entries read, as `merge` reads it: a problem found reading the
/// entries gives way to what a read through finds wrong with the file ([`Partial::check`]).
fn read(bytes: &[u8]) -> Result<(Partial, Vec<Entry>), String> {
    let f = file(bytes);
    let p = Partial::open(f.path()).map_err(|e| e.to_string())?;
    match p.entries().map_err(|e| e.to_string())?.collect::<Result<Vec<_>, _>>() {
        Ok(entries) => Ok((p, entries)),
        Err(e) => Err(p.check().err().map_or(e, |c| c.to_string())),
    }
}

/// A partial is read once: opening it reads its header and its end, and its seal is
/// checked when its entries have been read to the end line. A byte changed in between is
/// found there (and said in the words of a read through), not trusted.
#[test]
fn a_partial_is_read_once_and_its_seal_checked_at_its_end() {
    let bytes = written(|rec| {
        rec.error(&Pos(1, 1), "x").unwrap();
        rec.error(&Pos(1, 2), "y").unwrap();
    });
    let f = file(&bytes);
    let p = Partial::open(f.path()).unwrap();
    assert!(!p.verified.load(Ordering::Relaxed));
    assert_eq!(p.entries().unwrap().count(), 2);
    assert!(
        p.verified.load(Ordering::Relaxed),
        "read to its end, its seal was checked"
    );
    // The same length, one byte of an entry changed: still an entry that reads.
    let text = String::from_utf8(bytes)
        .unwrap()
        .replacen("\"error\":\"x\"", "\"error\":\"w\"", 1);
    let f = file(text.as_bytes());
    let p = Partial::open(f.path()).unwrap();
    let read: Vec<Result<Entry, String>> = p.entries().unwrap().collect();
    assert_eq!(read.len(), 3, "two entries, then what is wrong at the end: {read:?}");
    assert!(read[0].is_ok() && read[1].is_ok());
    let name = f.path().display();
    assert_eq!(
        read[2].as_ref().unwrap_err(),
        &format!("`{name}` is damaged: its entries do not end where its end says (was it changed?)")
    );
    assert_eq!(
        p.check().unwrap_err().to_string(),
        "is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)"
    );
    assert!(!p.verified.load(Ordering::Relaxed));
}

/// What is written reads back: the header, each entry in order with its position and missing
/// queue (the first job of a queue only), the end; and the whole is one JSON document.
#[test]
fn a_partial_reads_back_and_is_one_json_document() {
    let bytes = written(|rec| {
        rec.fallback(&Pos(1, 3), "a", Some(Fallback::Missing("q".into())))
            .unwrap();
        rec.fallback(&Pos(1, 4), "b", Some(Fallback::Missing("q".into())))
            .unwrap();
        rec.error(&Pos(1, 5), "h.jsonl:5: bad").unwrap();
        rec.left_out(&Pos(0, 9), "row").unwrap();
        rec.fallback(&Pos(1, 6), "c", Some(Fallback::NoQueue)).unwrap();
    });
    let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["partial"], "retryctl");
    assert_eq!(doc["entries"].as_array().unwrap().len(), 3);
    assert_eq!(doc["end"]["usedGiven"], true);
    let (p, entries) = read(&bytes).unwrap();
    assert_eq!(p.header, header(Shard { index: 1, count: 3 }));
    assert_eq!(p.end.entries, 3);
    assert_eq!(p.end.source.as_deref(), Some("0000000000000abc"));
    let shown: Vec<String> = entries
        .iter()
        .map(|e| format!("{:?} {:?} {:?}", e.at, e.missing_queue, e.item))
        .collect();
    assert_eq!(
        shown,
        [
            "Pos(1, 3) Some(\"q\") Fallback(\"a\")",
            "Pos(1, 5) None Error(\"h.jsonl:5: bad\")",
            "Pos(0, 9) None LeftOut(\"row\")",
        ]
    );
}

/// A partial is opened (its header and end), then its entries read: a file put in its
/// place, or written to, between the two is refused by name, not trusted on what was read
/// of the first.
#[test]
fn a_partial_changed_between_its_two_reads_is_refused() {
    let bytes = written(|rec| rec.error(&Pos(1, 5), "h.jsonl:5: bad").unwrap());
    let f = file(&bytes);
    let p = Partial::open(f.path()).unwrap();
    // Another file of the same bytes, renamed over it: another inode.
    let other = file(&bytes);
    std::fs::rename(other.path(), f.path()).unwrap();
    let err = p.entries().err().unwrap().to_string();
    let name = f.path().display();
    assert_eq!(
        err,
        format!("`{name}` changed while it was merged (another file in its place, or written to since it was checked)")
    );
    // Written to in place: another length.
    let p = Partial::open(f.path()).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(f.path())
        .unwrap()
        .write_all(b"\n")
        .unwrap();
    assert!(p
        .entries()
        .err()
        .unwrap()
        .to_string()
        .ends_with("changed while it was merged (another file in its place, or written to since it was checked)"));
}

/// A file that does not begin as a partial is refused on its first bytes: a first line of
/// 256 MiB was read before it was.
#[test]
fn a_file_that_does_not_begin_as_a_partial_is_refused_at_once() {
    let f = tempfile::NamedTempFile::new().unwrap();
    // Sparse: 300 MiB of zeros, no newline; reading it to the line's end would take seconds.
    f.as_file().set_len(300 << 20).unwrap();
    let err = Partial::open(f.path()).err().unwrap().to_string();
    assert!(err.starts_with("is not a retryctl partial result"), "{err}");
    assert!(Partial::open(file(b"").path())
        .err()
        .unwrap()
        .to_string()
        .starts_with("is not a retryctl partial result"));
}

/// A partial of a newer retryctl is refused: it may count what this one does not know.
#[test]
fn a_partial_of_a_newer_retryctl_is_refused() {
    let text = String::from_utf8(written(|_| {})).unwrap();
    let ours = env!("CARGO_PKG_VERSION");
    for (version, refused) in [("999.0.0", true), ("0.0.1", false), (ours, false), ("soon", true)] {
        let edited = reseal(&text.replacen(
            &format!("\"retryctl\":\"{ours}\""),
            &format!("\"retryctl\":\"{version}\""),
            1,
        ));
        match read(edited.as_bytes()) {
            Err(e) => {
                assert!(refused, "{version}: {e}");
                assert_eq!(
                    e,
                    format!(
                        "was written by retryctl {version}, newer than this one ({ours}): merge with that retryctl"
                    )
                );
            }
            Ok(_) => assert!(!refused, "{version}"),
        }
    }
}

#[test]
fn an_empty_partial_reads_back() {
    let (p, entries) = read(&written(|_| {})).unwrap();
    assert_eq!(p.end.entries, 0);
    assert!(entries.is_empty());
}

/// Every way one file can be wrong, in the words `merge` prints after its name.
#[test]
fn a_file_that_is_not_a_whole_partial_says_why() {
    let whole = written(|rec| {
        rec.error(&Pos(1, 1), "x").unwrap();
        rec.error(&Pos(1, 2), "y").unwrap();
    });
    let text = String::from_utf8(whole.clone()).unwrap();
    let err = |bytes: &[u8]| read(bytes).err().unwrap();
    assert_eq!(
        err(b"{\"jobs\": []}\n"),
        "is not a retryctl partial result (one begins with `{\"partial\":\"retryctl\"`; `simulate … -o partial` writes them)"
    );
    assert_eq!(err(b""), err(b"{\"jobs\": []}\n"));
    let newer = text.replacen("\"version\":6,", "\"version\":7,", 1);
    assert_eq!(
        err(newer.as_bytes()),
        "was written by a newer retryctl (partial version 7; this one reads version 6): merge with that retryctl"
    );
    let older = text.replacen("\"version\":6,", "\"version\":5,", 1);
    assert_eq!(
        err(older.as_bytes()),
        "was written by an older retryctl (partial version 5; this one reads version 6): run its shard again with this retryctl"
    );
    let cut = &whole[..whole.len() - 20];
    assert_eq!(
        err(cut),
        "is truncated: it ends after 2 entries without its end (was its shard cut short?)"
    );
    let lines: Vec<&str> = text.lines().collect();
    let one_less = format!("{}\n{}\n", lines[0], lines[2..].join("\n"));
    // An edit is found by the seal; sealed again, by what it breaks.
    assert_eq!(
        err(one_less.as_bytes()),
        "is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)"
    );
    let edited = text.replacen("\"error\":\"x\"", "\"error\":\"w\"", 1);
    assert_eq!(err(edited.as_bytes()), err(one_less.as_bytes()));
    assert!(read(reseal(&edited).as_bytes()).is_ok());
    assert_eq!(
        err(reseal(&one_less).as_bytes()),
        "is damaged: its end says 2 entries, it holds 1"
    );
    let after = format!("{text}{{}}\n");
    assert_eq!(err(after.as_bytes()), "is damaged: there is more after its end");
    let bad_entry = reseal(&text.replacen("\"error\":\"x\"", "\"error\":7", 1));
    assert!(
        err(bad_entry.as_bytes()).contains(": entry 1: invalid type: integer `7`, expected a string"),
        "{}",
        err(bad_entry.as_bytes())
    );
    let two_things = reseal(&text.replacen("\"error\":\"x\"", "\"error\":\"x\",\"leftOut\":\"z\"", 1));
    assert!(
        err(two_things.as_bytes()).ends_with(": entry 1: an entry must say one thing: a job, a change, an error, …")
    );
}

#[test]
fn the_fingerprint_is_sha256_of_the_inputs_and_changes_with_them() {
    let a = fingerprint(&serde_json::json!({"shards": 4}));
    assert_eq!(a.len(), 64);
    assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(a, fingerprint(&serde_json::json!({"shards": 4})));
    assert_ne!(a, fingerprint(&serde_json::json!({"shards": 5})));
}

/// `text` with its seal made again: an edit the seal does not catch, to reach the checks
/// behind it.
fn reseal(text: &str) -> String {
    let at = text.rfind(SEAL).unwrap();
    let mut seal = Seal::new();
    seal.update(&text.as_bytes()[..at]);
    let seal = seal_hex(&seal);
    format!("{}{SEAL}{seal}\"}}\n", &text[..at])
}

fn changed(job: &str, to: Final) -> Changed {
    let side = |final_state| Side {
        final_state,
        retries: 1,
        delay: GoDuration(0),
        runs: 2,
        runs_left: 0,
        compute: GoDuration(0),
    };
    Changed {
        diff: JobDiff {
            job: job.into(),
            baseline: side(Final::Failed),
            candidate: side(to),
            compute_added: GoDuration(0),
            compute_removed: GoDuration(0),
            resources: None,
        },
        class: None,
        depth: 1,
        steps: Some(Box::new(Steps {
            runs: Vec::new(),
            gap: None,
        })),
    }
}

/// The changed jobs a partial's bytes list, read back.
fn changes(bytes: &[u8]) -> Vec<Changed> {
    let (_, entries) = read(bytes).unwrap();
    entries
        .into_iter()
        .map(|e| match e.item {
            Item::Change(c) => *c,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// The recorder of the only shard of a run, writing into `out`.
fn one_shard(out: &mut Vec<u8>) -> Recorder<'_> {
    Recorder::new(
        out,
        &header(Shard { index: 0, count: 1 }),
        |f| f.name.clone(),
        crate::output::records::render_change,
    )
    .unwrap()
}

/// The recorder keeps the steps of each transition's first `n` changed jobs, and tells the
/// workers where that ends once it knows: from the `n`-th kept one of that transition on,
/// a later job of it builds none; other transitions are not cut until they fill up too.
#[test]
fn the_steps_cut_is_the_last_job_of_a_transition_that_keeps_its_steps() {
    let mut out = Vec::new();
    let mut rec = one_shard(&mut out);
    rec.keep_steps(2);
    let cut = rec.steps_cut();
    let rescued = Some(Transition::Rescued);
    rec.change(&Pos(1, 1), changed("a", Final::Succeeded), None).unwrap();
    assert!(cut.wanted(rescued, Pos(7, 7)), "one kept of two: not cut yet");
    rec.change(&Pos(1, 4), changed("b", Final::Succeeded), None).unwrap();
    assert!(cut.wanted(rescued, Pos(1, 4)));
    assert!(!cut.wanted(rescued, Pos(1, 5)));
    assert!(!cut.wanted(rescued, Pos(2, 0)));
    assert!(cut.wanted(Some(Transition::ToPending), Pos(2, 0)));
    rec.change(&Pos(1, 6), changed("c", Final::Succeeded), None).unwrap();
    rec.end(None, serde_json::json!({}), None).unwrap();
    let (_, entries) = read(&out).unwrap();
    let kept: Vec<bool> = entries
        .iter()
        .map(|e| match &e.item {
            Item::Change(c) => c.steps.is_some(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kept, [true, true, false]);
}

/// Past the jobs of its transition that keep their steps, a changed job with no side Pending
/// is its record alone (no output prints the rest of such a job); a Pending one keeps its
/// rest wherever it is (the merge estimates it). Read back, the record's fields are the job's
/// and the rest is none; an entry with neither a length nor a rest is refused.
#[test]
fn a_final_record_past_the_kept_steps_has_no_rest() {
    let mut first = changed("a", Final::Succeeded);
    first.class = Some(FailureClass::Exit(137));
    first.diff.candidate.compute = GoDuration(7_000_000_000);
    let mut second = first.clone();
    second.diff.job = "b".into();
    second.steps = None;
    let mut pending = changed("c", Final::Pending);
    pending.diff.candidate.runs_left = 4;
    pending.class = Some(FailureClass::Exit(1));
    pending.depth = 2;
    let mut out = Vec::new();
    let mut rec = one_shard(&mut out);
    rec.keep_steps(1);
    rec.change(&Pos(1, 1), first.clone(), None).unwrap();
    rec.change(&Pos(1, 2), second.clone(), None).unwrap();
    rec.change(&Pos(1, 3), pending.clone(), None).unwrap();
    rec.end(None, serde_json::json!({}), None).unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].contains(",\"more\":"), "{}", lines[1]);
    assert!(!lines[2].contains("more"), "{}", lines[2]);
    assert!(lines[2].ends_with("\"computeRemoved\":\"0s\"}},"), "{}", lines[2]);
    assert!(lines[3].contains(",\"more\":"), "{}", lines[3]);
    let back = changes(&out);
    let mut bare = second.clone();
    bare.class = None;
    bare.depth = 0;
    bare.diff.candidate.compute = GoDuration(0);
    assert_eq!(back, [first, bare.clone(), pending]);
    // A merge printing JSON copies its record as it is.
    let entry = lines[2].trim_end_matches(',').as_bytes().to_vec();
    match decode_for_records("p.json", Pos(1, 2), 2, entry).unwrap().item {
        Item::Record(r) => {
            assert!(r.json().starts_with(b"{\"job\":\"b\""));
            assert_eq!(r.changed("p.json").unwrap(), bare);
        }
        other => panic!("{other:?}"),
    }
    // Without its length, a record is not final: its rest must be there.
    let entry = lines[2].trim_end_matches(',');
    let (head, tail) = entry.split_once(",\"n\":").unwrap();
    let no_length = format!("{head}{}", &tail[tail.find(',').unwrap()..]);
    assert!(no_length.starts_with("{\"at\":[1,2],\"change\":"), "{no_length}");
    assert_eq!(
        decode_entry("p.json", 2, no_length.as_bytes()).unwrap_err(),
        "`p.json` is damaged: entry 2: a changed job without an `n` (a side Pending) must have its `more`"
    );
}

/// A changed job is its `-o json` record, then the rest: read back whole, it is the job the
/// shard recorded (every field, steps and the Pending side's runs left included); a merge
/// printing JSON takes the record of a job with no side Pending as it is, bytes for bytes
/// what `-o json` prints, and reads a Pending one whole (its estimate is the merge's).
#[test]
fn a_changed_job_is_its_json_record_and_reads_back_whole() {
    use crate::model::failure_history::Resources;
    let mut done = changed("job \"1\"", Final::Succeeded);
    done.diff.baseline.delay = GoDuration(1_500_000_000);
    done.diff.candidate.compute = GoDuration(7_200_000_000_123);
    done.diff.compute_added = GoDuration(3_723_000_000_000);
    done.diff.resources = Some(Resources {
        gpu_milli: Some(2000),
        ..Resources::default()
    });
    done.class = Some(FailureClass::Exit(137));
    done.depth = 3;
    done.steps = Some(Box::new(Steps {
        runs: vec![RunStep {
            run: 0,
            outcome: Outcome::Failed,
            class: Some(FailureClass::Exit(137)),
            baseline: Step::Failed,
            candidate: Step::Retried,
        }],
        gap: Some((1, 2)),
    }));
    let mut pending = changed("job-2", Final::Pending);
    pending.diff.candidate.runs_left = 4;
    let bytes = written(|rec| {
        rec.change(&Pos(1, 2), done.clone(), None).unwrap();
        rec.change(&Pos(1, 3), pending.clone(), Some(Fallback::Missing("q".into())))
            .unwrap();
    });
    let back = changes(&bytes);
    assert_eq!(back, [done.clone(), pending.clone()]);
    // The first as a JSON merge reads it: its record, as `-o json` prints the job.
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut want = Vec::new();
    crate::output::records::render_change(
        &Change {
            diff: &done.diff,
            class: done.class.as_ref(),
            baseline_estimate: None,
            candidate_estimate: None,
            steps: None,
        },
        &mut want,
    );
    let first = lines[1].trim_end_matches(',').as_bytes().to_vec();
    assert!(
        first.starts_with(format!("{{\"at\":[1,2],\"n\":{},\"change\":", want.len()).as_bytes()),
        "{}",
        lines[1]
    );
    match decode_for_records("p.json", Pos(1, 2), 1, first).unwrap().item {
        Item::Record(r) => {
            assert_eq!(r.json(), &want[..]);
            assert_eq!(r.changed("p.json").unwrap(), done);
            assert_eq!(r.job("p.json"), "job \"1\"");
        }
        other => panic!("{other:?}"),
    }
    // The Pending one has no length: read whole, with its missing queue.
    let second = lines[2].as_bytes().to_vec();
    assert!(!lines[2].contains("\"n\":"), "{}", lines[2]);
    let e = decode_for_records("p.json", Pos(1, 3), 2, second).unwrap();
    assert_eq!(e.missing_queue.as_deref(), Some("q"));
    assert!(matches!(e.item, Item::Change(c) if *c == pending));
}

/// A record whose transition is not the one its final states make was edited: refused,
/// naming the entry, not printed as it says.
#[test]
fn a_record_whose_transition_disagrees_is_damaged() {
    let bytes = written(|rec| rec.change(&Pos(1, 2), changed("a", Final::Succeeded), None).unwrap());
    let text = String::from_utf8(bytes).unwrap();
    let edited = reseal(&text.replacen("\"transition\":\"rescued\"", "\"transition\":\"lost\"", 1));
    let err = read(edited.as_bytes()).unwrap_err();
    assert!(
        err.ends_with("entry 1: its `transition` `lost` is not the one of its final states (`rescued`)"),
        "{err}"
    );
}

/// A step's number reads back as the outcome and sides it was made of; a number no shard
/// writes, or a gap past the steps, is refused saying what was expected.
#[test]
fn a_step_reads_back_from_its_number_and_refuses_what_no_shard_writes() {
    let steps = steps_of(Some((vec![(0, None), (36 + 6 + 3, None)], Some((1, 5)))))
        .unwrap()
        .unwrap();
    let shown: Vec<_> = steps
        .runs
        .iter()
        .map(|r| (r.run, r.outcome, r.baseline, r.candidate))
        .collect();
    assert_eq!(
        shown,
        [
            (0, Outcome::ALL[0], Step::ALL[0], Step::ALL[0]),
            (6, Outcome::ALL[1], Step::ALL[1], Step::ALL[3]),
        ]
    );
    assert_eq!(
        steps_of(Some((vec![(144, None)], None))).unwrap_err(),
        "a step's code `144` is not one a shard writes (0 to 143)"
    );
    assert_eq!(
        steps_of(Some((vec![(0, None)], Some((2, 1))))).unwrap_err(),
        "its steps' gap is at step 2, past their 1 steps (expected one among them)"
    );
}

/// The position every recorded entry starts with is written by hand; it is the text serde
/// writes for a `Pos` (the one `decode_entry` falls back on), and `at_prefix` reads it back,
/// up to the largest position.
#[test]
fn a_position_is_written_as_serde_writes_it_and_read_back() {
    for at in [Pos(0, 0), Pos(1, 22_426_814), Pos(u64::MAX, u64::MAX)] {
        let mut buf = b"{\"at\":".to_vec();
        write_at(&mut buf, &at);
        assert_eq!(
            buf,
            format!("{{\"at\":{}", serde_json::to_string(&at).unwrap()).into_bytes()
        );
        buf.push(b'}');
        assert_eq!(at_prefix(&buf), Some((at, &b"}"[..])));
    }
}

/// A number the merge reads by hand: every digit up to `u64::MAX`, nothing past it (the
/// first 19 digits are read unchecked: no 19 digits overflow), leading zeros as any reader
/// of digits takes them; and what passes over a position without reading it stops where
/// reading it does.
#[test]
fn a_number_is_read_up_to_u64_max_and_refused_past_it() {
    let read =
        |text: &str| leading_number(text.as_bytes()).map(|(n, rest)| (n, String::from_utf8_lossy(rest).into_owned()));
    assert_eq!(read("0]"), Some((0, "]".into())));
    assert_eq!(
        read("9999999999999999999,"),
        Some((9_999_999_999_999_999_999, ",".into()))
    );
    assert_eq!(read("18446744073709551615]"), Some((u64::MAX, "]".into())));
    assert_eq!(read("18446744073709551616]"), None);
    assert_eq!(read("99999999999999999999"), None);
    assert_eq!(read("0000000000000000000000042x"), Some((42, "x".into())));
    assert_eq!(read("x1"), None);
    assert_eq!(read(""), None);
    for text in [
        &b"{\"at\":[1,22426814],\"n\":3"[..],
        b"{\"at\":[0,0]}",
        b"{\"at\":[1,]}",
        b"{\"at\":[,2]}",
        b"{\"at\":[1 ,2]}",
    ] {
        assert_eq!(
            past_at(text),
            at_prefix(text).map(|(_, rest)| rest),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
}

/// Entries are read where the reader holds them when a line is whole in its buffer, and the
/// long way when the buffer cuts one: a partial of many entries of every length reads back
/// the same either way, its seal checked, and a byte changed far into it is found.
#[test]
fn entries_read_back_whether_or_not_the_reader_buffer_cuts_their_lines() {
    let message = |i: u64| "m".repeat((i * 37 % 1500) as usize);
    let bytes = written(|rec| {
        for i in 1..=400 {
            rec.error(&Pos(1, i), &message(i)).unwrap();
        }
    });
    assert!(bytes.len() > 4 * (1 << 16), "the reader's buffer is cut many times");
    let (p, entries) = read(&bytes).unwrap();
    assert!(p.verified.load(Ordering::Relaxed));
    let got: Vec<(Pos, String)> = entries
        .into_iter()
        .map(|e| match e.item {
            Item::Error(m) => (e.at, m),
            other => panic!("not an error: {other:?}"),
        })
        .collect();
    let expected: Vec<(Pos, String)> = (1..=400).map(|i| (Pos(1, i), message(i))).collect();
    assert_eq!(got, expected);
    // One byte of the 300th entry's message, past several buffers.
    let text = String::from_utf8(bytes).unwrap();
    let at = text.find("{\"at\":[1,300]").unwrap() + 40;
    let mut changed = text.into_bytes();
    changed[at] = b'w';
    let err = read(&changed).unwrap_err();
    assert_eq!(
        err,
        "is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)"
    );
}

/// A `suggest` shard's entry: what it learned, in its command's own shape, after its
/// position; read back raw (position first) and decoded in the shape asked for, or as
/// numbers to check; anything else in it is refused, naming the file and the entry.
#[test]
fn a_learned_entry_reads_back_in_its_commands_shape() {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Learnt {
        text: String,
        trials: u64,
        successes: u64,
    }
    let learnt = Learnt {
        text: "exit:1@main".into(),
        trials: 3,
        successes: 2,
    };
    let bytes = written(|rec| {
        rec.learned(&Pos(1, 12), &learnt).unwrap();
        rec.learned(&Pos(1, 90), &learnt).unwrap();
    });
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert_eq!(
        text.lines().nth(1),
        Some(r#"{"at":[1,12],"learned":{"text":"exit:1@main","trials":3,"successes":2}},"#)
    );
    let f = file(&bytes);
    let p = Partial::open(f.path()).unwrap();
    let mut entries = p.entries().unwrap();
    let mut read = Vec::new();
    while let Some(raw) = entries.next_raw() {
        let raw = raw.unwrap();
        let counts: super::counts::Counts = decode_learned("p", raw.number, &raw.json).unwrap();
        counts.check().unwrap();
        read.push((raw.at, decode_learned::<Learnt>("p", raw.number, &raw.json).unwrap()));
    }
    assert_eq!(read.len(), 2);
    assert_eq!(read[1].0, Pos(1, 90));
    assert_eq!(read[1].1, learnt);
    assert!(p.verified.load(Ordering::Relaxed));
    assert_eq!(
        decode_learned::<Learnt>("p", 3, br#"{"at":[1,1],"job":{}}"#).unwrap_err(),
        "`p` is damaged: entry 3: unknown field `job`, expected `at` or `learned` at line 1 column 17"
    );
}
