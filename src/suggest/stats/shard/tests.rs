use super::*;
use crate::model::duration::GoDuration;
use crate::model::failure_history::{Container, Resources, Run};
use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::policy::Condition;
use crate::model::signature::FailedTexts;
use crate::suggest::stats::{MAX_SIGNATURES, OTHER};

fn failed(node: &str, exit: i64) -> Run {
    Run {
        node: Some(node.into()),
        outcome: Outcome::Failed,
        run_for: GoDuration(3_600_000_000_000),
        containers: vec![Container {
            name: "main".into(),
            exit_code: exit,
            ..Container::default()
        }],
        ..Run::default()
    }
}

fn succeeded(node: &str) -> Run {
    Run {
        node: Some(node.into()),
        outcome: Outcome::Succeeded,
        run_for: GoDuration(1_800_000_000_000),
        ..Run::default()
    }
}

#[test]
fn a_job_counts_its_trials_hours_and_nodes() {
    let mut h = FailureHistory::default();
    h.job.resources = Some(Resources {
        gpu_milli: Some(2000),
        ..Resources::default()
    });
    h.runs = vec![failed("a", 1), failed("a", 1), failed("b", 2), succeeded("c")];
    let mut unit = UnitLearned::default();
    unit.add_job(&h, &[], &[], FailedTexts::default().of(&h.runs));
    let mut l = Learned::default();
    l.merge_unit(unit);
    assert_eq!((l.jobs, l.failed_runs), (1, 3));
    let s = &l.signatures[0];
    assert_eq!(s.text, "exit:1@main");
    assert_eq!((s.failed_runs, s.jobs), (2, 1));
    assert_eq!((s.trials.trials, s.trials.successes), (2, 0));
    assert_eq!((s.by_depth[0].trials, s.by_depth[1].trials), (1, 1));
    assert_eq!((s.same_node.trials, s.other_node.trials), (1, 1));
    // 2 GPUs × 1 h for each failed run; its next runs 2 × 1 h each.
    let gpu_hour = 3_600_000_000_000u128 * 1000;
    assert_eq!(s.gpu.failed, 4 * gpu_hour);
    assert_eq!(s.gpu.after, 4 * gpu_hour);
    assert_eq!(s.gpu.futile, 0);
    let e2 = &l.signatures[1];
    assert_eq!((e2.trials.trials, e2.trials.successes), (1, 1));
    assert_eq!(e2.by_depth[2].trials, 1);
    assert_eq!(e2.gpu.after, gpu_hour);
    // Each run once: exit 1's next runs both failed again (the second is exit 2's own
    // failed run), so its hours are its failed runs'; the sum is the job's 7 GPU-hours.
    assert_eq!((s.gpu.again, s.gpu.once()), (4 * gpu_hour, 4 * gpu_hour));
    assert_eq!((e2.gpu.again, e2.gpu.once()), (0, 3 * gpu_hour));
    assert_eq!(s.gpu.once() + e2.gpu.once(), 7 * gpu_hour);
    assert_eq!(l.nodes["a"].runs, 2);
    assert_eq!(l.nodes["a"].failed, 2);
    assert_eq!(l.nodes["c"].failed, 0);
}

#[test]
fn signatures_past_the_cap_count_as_other() {
    let mut l = Learned::default();
    for code in 0..(MAX_SIGNATURES as i64 + 5) {
        let h = FailureHistory {
            runs: vec![failed("n", code + 1)],
            ..FailureHistory::default()
        };
        let mut unit = UnitLearned::default();
        unit.add_job(&h, &[], &[], FailedTexts::default().of(&h.runs));
        l.merge_unit(unit);
    }
    assert_eq!(l.signatures.len(), MAX_SIGNATURES);
    let other = l.other.as_ref().unwrap();
    assert_eq!((other.failed_runs, other.jobs), (5, 5));
    assert_eq!(l.nodes["n"].signatures[&usize::MAX], 5);
}

/// Everything a learning says, comparable (as text: its hours pass 64 bits): its counts,
/// each signature kept in order with all of its counts (nodes sorted), `other`'s, and each
/// node's runs and failed runs by signature text.
fn said(l: &Learned) -> String {
    let out = |s: &SignatureStats| {
        let mut nodes: Vec<(String, u64)> = s.nodes.iter().map(|(n, k)| (n.clone(), *k)).collect();
        nodes.sort();
        SignatureOut::of(s.clone(), nodes)
    };
    let mut nodes: Vec<_> = l
        .nodes
        .iter()
        .map(|(name, n)| {
            let mut by: Vec<(String, u64)> = n
                .signatures
                .iter()
                .map(|(slot, k)| (l.text_of(*slot).to_string(), *k))
                .collect();
            by.sort();
            (name.clone(), n.runs, n.failed, by)
        })
        .collect();
    nodes.sort();
    let sigs: Vec<_> = l.signatures.iter().map(out).collect();
    serde_json::to_string(&(l.jobs, l.failed_runs, sigs, l.other.as_ref().map(out), nodes)).unwrap()
}

/// One process's learning of `jobs`, `unit` jobs a unit.
fn one(jobs: &[FailureHistory], unit: usize) -> Learned {
    let mut l = Learned::default();
    for chunk in jobs.chunks(unit) {
        let mut u = UnitLearned::default();
        chunk
            .iter()
            .for_each(|h| u.add_job(h, &[], &[], FailedTexts::default().of(&h.runs)));
        l.merge_unit(u);
    }
    l
}

/// A shard of `jobs` (`first` in the source or not), `unit` jobs a unit, as its partial
/// holds it and `merge` reads it back (through JSON): its totals, and the entries it
/// wrote as it went. Checks that it never held more than one process keeps, and one
/// unit's.
fn shard(jobs: &[FailureHistory], first: bool, unit: usize) -> (ShardLearned, Vec<PastSignature>) {
    let mut l = Learned::of_a_shard(first);
    let mut past = Vec::new();
    for chunk in jobs.chunks(unit) {
        let mut u = UnitLearned::default();
        chunk
            .iter()
            .for_each(|h| u.add_job(h, &[], &[], FailedTexts::default().of(&h.runs)));
        let met = u.sigs.len();
        l.merge_unit(u);
        let held = l.past.as_ref().map_or(0, |p| p.held.len());
        assert!(held < MAX_SIGNATURES + met, "{held} held");
        assert!(l.signatures.len() <= MAX_SIGNATURES);
        past.extend(l.take_past(false));
    }
    past.extend(l.take_past(true));
    let json = serde_json::to_string(&l.into_shard()).unwrap();
    let past = past
        .iter()
        .map(|p| serde_json::from_str(&serde_json::to_string(p).unwrap()).unwrap())
        .collect();
    (serde_json::from_str(&json).unwrap(), past)
}

/// The merge of shards in the source's order: every shard's totals, then their entries.
fn merged(shards: Vec<(ShardLearned, Vec<PastSignature>)>) -> Learned {
    let mut l = Learned::default();
    let mut entries = Vec::new();
    for (totals, past) in shards {
        l.merge_shard(totals).unwrap();
        entries.extend(past);
    }
    for p in entries {
        l.merge_past(p).unwrap();
    }
    l
}

/// `jobs` split at `at` (ascending), each part a shard (the first one first).
fn split(jobs: &[FailureHistory], at: &[usize], unit: usize) -> Learned {
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(at.iter().copied())
        .chain([jobs.len()])
        .collect();
    let shards = bounds
        .windows(2)
        .enumerate()
        .map(|(i, w)| shard(&jobs[w[0]..w[1]], i == 0, unit))
        .collect();
    merged(shards)
}

/// `n` jobs, each failing once with its own exit code (past 10,000 signatures in all).
/// The first 100 also fail with one of 40 shared codes, and so do some of the last
/// quarter's (one in 350, preempted one time in five): after any later shard's own first
/// 10,000, so that it holds runs of signatures an earlier shard kept. Code 47 first fails
/// in the last quarter, one job in 500 (past the cap in every shard). Nodes `n0`–`n6`;
/// three jobs in four then succeed.
fn history(n: usize) -> Vec<FailureHistory> {
    (0..n)
        .map(|k| {
            let node = format!("n{}", k % 7);
            let late = k >= n * 3 / 4;
            let mut runs = Vec::new();
            let shared = match k {
                k if k < 100 => Some(k),
                k if late && k % 350 == 0 => Some(k / 350),
                _ => None,
            };
            if let Some(i) = shared {
                let mut run = failed(&node, 1 + (i % 40) as i64);
                if i % 5 == 0 {
                    run.conditions.push(Condition::Preempted);
                }
                runs.push(run);
            }
            if late && k % 500 == 0 {
                runs.push(failed(&node, 47));
            }
            runs.push(failed(&format!("n{}", (k + 1) % 7), 100_000 + k as i64));
            if k % 4 != 0 {
                runs.push(succeeded(&node));
            }
            FailureHistory {
                runs,
                ..FailureHistory::default()
            }
        })
        .collect()
}

#[test]
fn shards_merge_to_one_process_past_the_cap_holding_no_more_than_it() {
    let jobs = history(50_000);
    let whole = one(&jobs, 100);
    assert_eq!(whole.signatures.len(), MAX_SIGNATURES);
    let other = whole.other.as_ref().unwrap();
    assert!(other.failed_runs > 40_000, "{}", other.failed_runs);
    // A shared code the first jobs kept, met again in the last quarter; code 47 is `other`.
    assert!(whole.slot_of("exit:2@main") < MAX_SIGNATURES);
    assert_eq!(whole.slot_of("exit:47@main"), usize::MAX);
    let expected = said(&whole);
    // Two and three shards, a first shard short of 10,000 signatures, a short middle one.
    for at in [
        &[25_000][..],
        &[5_000],
        &[45_000],
        &[12_000, 30_000],
        &[20_000, 21_000],
        &[3_000, 6_000],
    ] {
        for unit in [1, 64] {
            assert_eq!(
                said(&split(&jobs, at, unit)),
                expected,
                "split at {at:?}, {unit} a unit"
            );
        }
    }
}

#[test]
fn a_later_shard_hands_over_what_is_past_its_first_10000_in_pieces() {
    let jobs = history(50_000);
    // The second half: 25,000 signatures of its own, 10,000 kept, the rest held 10,000 at
    // most at a time; a signature met in two pieces is in both.
    let (totals, past) = shard(&jobs[25_000..], false, 64);
    assert_eq!(totals.signatures.len(), MAX_SIGNATURES);
    assert!(totals.other.is_none());
    let texts: Vec<&str> = past.iter().map(|p| p.0.text.as_str()).collect();
    assert!(texts.len() > 15_000, "{}", texts.len());
    assert!(texts.iter().filter(|t| **t == "exit:47@main").count() > 1);
    assert!(texts.contains(&"exit:2@main"));
    // The first shard: `other`, as one process, and no entry.
    let (totals, past) = shard(&jobs[..25_000], true, 64);
    assert!(past.is_empty());
    assert!(totals.other.is_some_and(|o| o.failed_runs > 0 && o.signature.is_none()));
}

#[test]
fn the_merge_refuses_what_only_an_edited_partial_holds() {
    let past = |text: &str| -> PastSignature {
        let s = SignatureStats::new(text.to_string(), None);
        serde_json::from_str(&serde_json::to_string(&PastSignature(SignatureOut::of(s, Vec::new()))).unwrap()).unwrap()
    };
    // A signature past a shard's first 10,000, where the shards list fewer.
    let mut l = one(&history(20), 4);
    assert_eq!(
        l.merge_past(past("exit:3@main")).unwrap_err(),
        "it counts signature `exit:3@main` past its shard's first 10,000, and the shards list 37 signatures in all"
    );
    // `other` from a shard that is not the first with signatures.
    let other: SignatureOut = SignatureOut::of(SignatureStats::new(OTHER.to_string(), None), Vec::new());
    let json = format!(
        r#"{{"jobs":1,"failedRuns":1,"signatures":[],"other":{},"nodes":[]}}"#,
        serde_json::to_string(&other).unwrap()
    );
    assert_eq!(
        l.merge_shard(serde_json::from_str(&json).unwrap()).unwrap_err(),
        "its totals count runs under `other`, which only the first shard with signatures does, past its first 10,000"
    );
    assert_eq!(l.jobs, 20);
}

#[test]
fn a_shard_whose_nodes_name_a_signature_it_lacks_is_refused() {
    let json = r#"{"jobs":1,"failedRuns":1,"signatures":[],"nodes":[["n",1,1,[[3,1]]]]}"#;
    let mut l = Learned::default();
    assert_eq!(
        l.merge_shard(serde_json::from_str(json).unwrap()).unwrap_err(),
        "its totals' nodes name signature 3, and it lists 0 signatures"
    );
    assert_eq!(l.jobs, 0);
}
