//! `tune -o json|yaml`: every candidate and every skipped one, as a record whose numbers
//! print as `simulate --baseline` prints them (`records::{transitions_json, compute_json,
//! estimate_json}`).
//!
//! Owns: the record's field names. Must not: count or rank.

use serde_json::{json, Map, Value};

use crate::model::failure_history::Final;
use crate::tune::rank::{Excluded, Scored};

use crate::output::records::{
    backtest_json, compute_json, contention_json, estimate_json, explained_json, incidents_json, transitions_json,
};
use crate::output::words::ESTIMATE_METHOD;

use super::view::*;

pub(super) fn finals_json(f: &[u64; 4]) -> Value {
    json!({
        "Succeeded": f[Final::Succeeded as usize],
        "Failed": f[Final::Failed as usize],
        "Pending": f[Final::Pending as usize],
        "Cancelled": f[Final::Cancelled as usize],
    })
}

pub(super) fn values_json(values: &[(String, String)]) -> Value {
    Value::Object(values.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

/// The constraint a candidate breaks, named as `constraints` names it.
pub(super) fn excluded_key(e: &Excluded) -> &'static str {
    match e {
        Excluded::Lost { .. } => "maxLost",
        Excluded::Compute { .. } => "maxCompute",
        Excluded::WithoutEstimate { .. } => "withoutEstimate",
    }
}

/// A candidate as docs/tune.md's record.
pub(super) fn candidate_json(s: &Scored, categorized: bool) -> Value {
    let c = &s.tally.comparison;
    let mut v = json!({
        "id": s.id,
        "values": values_json(&s.values),
        "final": finals_json(&s.tally.finals),
        "changed": c.changed,
        "transitions": transitions_json(c, false),
        "retries": {"added": c.retries_added, "removed": c.retries_removed},
        "delay": {"added": c.delay_added.to_string(), "removed": c.delay_removed.to_string()},
        "compute": compute_json(c, &s.pending),
        "estimate": estimate_json(&s.asked, &s.pending, false),
        "expectedSucceeded": s.expected_succeeded,
        "cost": s.cost,
        "frontier": s.frontier,
    });
    if let (false, Value::Object(m)) = (s.eligible(), &mut v) {
        let keys: Vec<&str> = s.excluded.iter().map(excluded_key).collect();
        m.insert("excluded".into(), json!(keys));
    }
    if let (true, Value::Object(m)) = (categorized, &mut v) {
        m.insert("collisions".into(), json!(collisions(s)));
    }
    if let Value::Object(m) = &mut v {
        contention_json(m, c.contention.as_ref().map(|k| &k.candidate), c.contention_sharded);
        // The OVERLAP column's number, GPU's and CPU's: the candidate's baseline is not in the
        // record (each settings group has its own), so its side alone could not give it.
        if let Some(k) = &c.contention {
            let [gpu, cpu] = k.overlap_change();
            m.insert("overlapChangeHours".into(), json!({"gpu": gpu, "cpu": cpu}));
        }
    }
    v
}

/// `{tune: {…}}`, every candidate in id order.
pub fn document(view: &TuneView<'_>) -> Value {
    let r = view.ranked;
    let varied: Vec<Value> = view
        .varied
        .iter()
        .map(|(vary, values)| json!({"vary": vary, "values": values}))
        .collect();
    let skipped: Vec<Value> = view
        .skipped
        .iter()
        .map(|s| {
            let errors: Vec<Value> = s
                .errors
                .iter()
                .map(|e| {
                    let mut m = Map::new();
                    m.insert("path".into(), json!(e.path));
                    m.insert("message".into(), json!(e.message));
                    m.insert("file".into(), json!(e.file));
                    if let Some(d) = e.document {
                        m.insert("document".into(), json!(d));
                    }
                    if let Some(n) = &e.name {
                        m.insert("name".into(), json!(n));
                    }
                    Value::Object(m)
                })
                .collect();
            json!({"id": s.id, "values": values_json(&s.values), "errors": errors})
        })
        .collect();
    let mut tune = json!({
        "jobs": view.jobs,
        "errors": view.errors,
        "baselineFrom": baseline_name(view.baseline_from),
        "baseline": {
            "final": finals_json(&r.baseline.finals),
            "expectedSucceeded": r.baseline.expected_succeeded,
            "cost": r.baseline.cost,
        },
        "varied": varied,
        "candidates": r.candidates.iter().map(|s| candidate_json(s, view.categorized)).collect::<Vec<_>>(),
        "skipped": skipped,
        "recommended": r.recommended.map(|i| r.candidates[i].id),
        "constraints": {
            "maxLost": view.max_lost,
            "maxCompute": view.max_compute,
            "maxComputeSeconds": r.max_compute,
        },
        "method": ESTIMATE_METHOD,
    });
    // Counted only against a policy the cluster ran (not a template standing in for none).
    if let (Some(e), Some(b)) = (
        &r.baseline.explained,
        tune.get_mut("baseline").and_then(Value::as_object_mut),
    ) {
        b.insert("explained".into(), explained_json(e));
    }
    if let (Some(b), Value::Object(m)) = (view.backtest, &mut tune) {
        m.insert("backtest".into(), backtest_json(b));
    }
    if let (Some(i), Value::Object(m)) = (incidents_json(view.incidents), &mut tune) {
        m.insert("incidents".into(), i);
    }
    json!({ "tune": tune })
}
