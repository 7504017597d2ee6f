//! The `{suggest: …}` record as JSON or YAML: its members, their field names and values, and
//! the pieces `Doc` writes around the streamed comparisons (the proposal, the rules' check
//! and what was learned, the backtest, the verdict).
//!
//! Owns: the record's field names (stable: add, never rename). Must not: write the table, the
//! page or the report, or stream a comparison (`capture` does).

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::engine::EngineKind;
use crate::output::Format;
use crate::replay::compare::hours;
use crate::suggest::nodes::Suspect;
use crate::suggest::propose::{DefaultDecision, Defaults, NoRule, Proposed, Verdict};
use crate::suggest::stats::{Hours, SignatureStats};
use crate::suggest::verdict::Judgement;

use super::capture::BacktestTail;
use super::fields::{json_fields, write_fields, yaml_of, Field};
use super::report::{Head, IncidentsView, Report};
use crate::output::records::{busy_entry, Busy};
use crate::replay::incidents::{Kind, Window};
use crate::suggest::incidents::Listed;

fn hours_json(h: &Hours) -> Value {
    json!({"failed": hours(h.failed), "after": hours(h.after), "futile": hours(h.futile), "again": hours(h.again), "once": hours(h.once())})
}

fn tally_json(t: crate::replay::estimate::Tally) -> Value {
    json!({"trials": t.trials, "successes": t.successes})
}

fn no_rule_json(n: &NoRule) -> Value {
    Value::String(n.to_string())
}

/// One signature's record; with incident windows (`incidents`), its runs in them, and the
/// verdict with them counted where it differs.
fn signature_json(s: &SignatureStats, v: &Verdict, incidents: Option<&IncidentsView<'_>>) -> Value {
    let (rate, low, high) = match s.rate() {
        Some((r, l, h)) => (json!(r), json!(l), json!(h)),
        None => (Value::Null, Value::Null, Value::Null),
    };
    let depths: Vec<Value> = ["1", "2", "3", "4", "5+"]
        .iter()
        .zip(s.by_depth)
        .map(|(d, t)| json!({"depth": d, "trials": t.trials, "successes": t.successes}))
        .collect();
    let current: Vec<Value> = s
        .current_sorted()
        .into_iter()
        .map(|(rule, action, runs)| json!({"rule": rule, "action": action.as_str(), "runs": runs}))
        .collect();
    let top: Vec<Value> = s
        .top_nodes()
        .into_iter()
        .map(|(node, runs)| json!({"node": node, "runs": runs}))
        .collect();
    let mut m = Map::new();
    m.insert("signature".into(), json!(s.text));
    m.insert("failedRuns".into(), json!(s.failed_runs));
    m.insert("jobs".into(), json!(s.jobs));
    m.insert("trials".into(), json!(s.trials.trials));
    m.insert("successes".into(), json!(s.trials.successes));
    m.insert("rate".into(), rate);
    m.insert("low".into(), low);
    m.insert("high".into(), high);
    m.insert("byDepth".into(), Value::Array(depths));
    m.insert("recorded".into(), json!(s.recorded));
    m.insert("current".into(), Value::Array(current));
    m.insert("undecided".into(), json!(s.undecided()));
    m.insert("gpuHours".into(), hours_json(&s.gpu));
    m.insert("cpuHours".into(), hours_json(&s.cpu));
    m.insert(
        "nodes".into(),
        json!({
            "distinct": s.nodes.len(),
            "top": top,
            "sameNode": tally_json(s.same_node),
            "otherNode": tally_json(s.other_node),
        }),
    );
    if s.collided > 0 {
        m.insert("collided".into(), json!(s.collided));
    }
    if incidents.is_some() {
        m.insert("inIncidents".into(), json!(s.in_incidents));
    }
    verdict_fields(&mut m, "proposed", "noRule", v);
    if let Some(with) = incidents.and_then(|i| i.sensitive.get(&s.text)) {
        verdict_fields(&mut m, "withIncidents", "withIncidentsNoRule", with);
    }
    Value::Object(m)
}

/// A verdict as `key` (its rule, or `null` and why under `why`).
fn verdict_fields(m: &mut Map<String, Value>, key: &str, why_key: &str, v: &Verdict) {
    match v {
        Verdict::Rule(p) => {
            m.insert(key.into(), rule_json(p));
        }
        Verdict::None(why) => {
            m.insert(key.into(), Value::Null);
            m.insert(why_key.into(), no_rule_json(why));
        }
    }
}

/// The incident windows (docs/reference/suggest.md "Incidents"): each with its jobs, failed
/// runs, their GPU-hours, its commonest signatures and nodes (5 and 3 at most), and the
/// record's retries of its failed runs.
fn incidents_json(i: &IncidentsView<'_>) -> Value {
    let windows: Vec<Value> = i
        .found
        .windows
        .iter()
        .map(|(w, l)| {
            let map = |top: Vec<(&str, u64)>| -> Map<String, Value> {
                top.into_iter().map(|(k, n)| (k.to_string(), json!(n))).collect()
            };
            json!({
                "from": w.from.to_string(),
                "to": w.to.to_string(),
                "detected": w.detected,
                "given": w.given,
                "jobs": l.jobs,
                "failedRuns": l.failed_runs,
                "gpuHours": hours(l.gpu),
                "signatures": map(Listed::top(&l.signatures, 5)),
                "nodes": map(Listed::top(&l.nodes, 3)),
                "retried": l.retried,
                "retriedSucceeded": l.retried_succeeded,
            })
        })
        .collect();
    Value::Array(windows)
}

/// The bursts and the surges (docs/reference/suggest.md "Incidents"), learned from: a burst's
/// job set, a surge's busiest hour's jobs and the count expected there, and each one's jobs,
/// failed runs and GPU-hours in the window.
fn busy_json(busy: &[(Window, Kind, Listed)]) -> (Value, Value) {
    let (mut bursts, mut surges) = (Vec::new(), Vec::new());
    for (w, kind, l) in busy {
        let learned = |mut m: Map<String, Value>, jobs: bool| {
            if jobs {
                m.insert("jobs".into(), json!(l.jobs));
            }
            m.insert("failedRuns".into(), json!(l.failed_runs));
            m.insert("gpuHours".into(), json!(hours(l.gpu)));
            Value::Object(m)
        };
        match busy_entry(w, kind) {
            Some(Busy::Burst(m)) => bursts.push(learned(m, true)),
            // A surge's `jobs` are its busiest hour's, already said.
            Some(Busy::Surge(m)) => surges.push(learned(m, false)),
            None => {}
        }
    }
    (Value::Array(bursts), Value::Array(surges))
}

fn rule_json(p: &Proposed) -> Value {
    let mut rule = json!({
        "signature": p.text,
        "action": p.action.as_str(),
        "limit": p.limit,
        "avoidSameNode": p.avoid_same_node,
    });
    if let Some(d) = p.extrapolated_from {
        rule["extrapolatedFrom"] = json!(d);
    }
    if let Some(why) = &p.as_today {
        rule["asToday"] = no_rule_json(why);
    }
    rule
}

fn suspect_json(s: &Suspect) -> Value {
    let sigs: Vec<Value> = s
        .signatures
        .iter()
        .map(|(sig, runs)| json!({"signature": sig, "runs": runs}))
        .collect();
    json!({"node": s.node, "runs": s.runs, "failed": s.failed, "tail": s.tail, "signatures": sigs})
}

/// The policy's default (docs/reference/suggest.md "The policy's defaults"): the pooled
/// counts as a signature's record, how many signatures were pooled, today's default and the
/// proposal's (`proposed`: the learned one, `null` with `noRule` saying why today's stays).
fn default_json(d: &Defaults, rules: &[Proposed], incidents: Option<&IncidentsView<'_>>) -> Value {
    let decision = |d: DefaultDecision| json!({"action": d.action.as_str(), "limit": d.limit});
    let mut m = match signature_json(&d.stats, &d.verdict, incidents) {
        Value::Object(m) => m,
        _ => unreachable!("a signature's record is an object"),
    };
    m.remove("nodes");
    m.remove("jobs");
    m.insert("pooledSignatures".into(), json!(d.pooled.len()));
    m.insert("today".into(), decision(d.today));
    m.insert("changes".into(), json!(d.changes()));
    m.insert(
        "asTodayRules".into(),
        json!(rules.iter().filter(|p| p.as_today.is_some()).count()),
    );
    Value::Object(m)
}

/// What was learned: the counts, every signature, the default, the suspect nodes; the
/// incident windows when there are some, the retries the record ran where the baseline's
/// categorizer says they collide when there are some.
fn head_fields<'a>(r: &'a Report<'a>) -> Vec<Field<'a>> {
    let incidents = r.incidents.as_ref();
    let mut fields = vec![
        Field::One("jobs", json!(r.jobs)),
        Field::One("failedRuns", json!(r.failed_runs)),
        Field::Each(
            "signatures",
            Box::new(r.signatures.iter().map(move |(s, v)| signature_json(s, v, incidents))),
        ),
        Field::One("default", default_json(r.default, r.rules, incidents)),
        Field::Each("suspectNodes", Box::new(r.suspects.iter().map(suspect_json))),
    ];
    if !r.busy.is_empty() {
        let (bursts, surges) = busy_json(r.busy);
        fields.push(Field::One("bursts", bursts));
        fields.push(Field::One("surges", surges));
    }
    if let Some(i) = incidents {
        fields.push(Field::One("incidents", incidents_json(i)));
        fields.push(Field::One(
            "incidentsLeftOut",
            json!({"failedRuns": i.found.left_out, "of": i.found.failed_runs}),
        ));
    }
    if r.collisions_ran > 0 {
        fields.push(Field::One("collisionsRan", json!(r.collisions_ran)));
    }
    fields
}

fn proposal_fields(head: &Head<'_>) -> Map<String, Value> {
    let Head {
        engine,
        name,
        rules,
        kept,
        upstream,
        policy_retry_limit,
    } = *head;
    let mut m = Map::new();
    m.insert(
        "engine".into(),
        json!(match engine {
            EngineKind::Design => "design",
            EngineKind::Upstream => "upstream",
        }),
    );
    m.insert("policy".into(), json!(name));
    m.insert("rules".into(), Value::Array(rules.iter().map(rule_json).collect()));
    m.insert(
        "kept".into(),
        Value::Array(
            kept.iter()
                .map(|k| match k.shadowed {
                    // Not written: a rule before it matches every failure it matches.
                    true => json!({"from": k.from, "decidedRuns": k.decided_runs, "shadowed": true}),
                    false => json!({"from": k.from, "decidedRuns": k.decided_runs}),
                })
                .collect(),
        ),
    );
    // The policy's `retryLimit` as `-o policy` writes it (`null`: not written, design only).
    m.insert("policyRetryLimit".into(), json!(policy_retry_limit));
    if let Some(u) = upstream {
        m.insert("raises".into(), json!(u.raises));
        if let Some(by) = &u.cut_by {
            m.insert("cut".into(), json!({"signatures": u.cut, "by": by}));
        }
        let cats: Vec<Value> = u
            .categories
            .iter()
            .map(|c| json!({"name": c.name, "action": if c.delete {"Delete"} else {"Retain"}, "signatures": c.signatures}))
            .collect();
        m.insert("categories".into(), Value::Array(cats));
        let merged: Vec<Value> = u
            .merged
            .iter()
            .map(|g| {
                let unsplit: Vec<Value> = g.unsplit.iter().map(|(s, u)| unsplit_record(s, u)).collect();
                json!({"category": g.category, "signatures": g.signatures, "unsplit": unsplit})
            })
            .collect();
        m.insert("merged".into(), Value::Array(merged));
        let changes: Vec<Value> = u
            .action_changes
            .iter()
            .map(|a| json!({"category": a.category, "takesFrom": a.takes_from, "action": if a.delete {"Delete"} else {"Retain"}}))
            .collect();
        m.insert("actionChanges".into(), Value::Array(changes));
    }
    m
}

/// The proposal's rules: the record's opening, JSON's left open for the comparison.
pub(super) fn proposal_head(out: &mut dyn Write, format: Format, head: &Head<'_>) -> io::Result<()> {
    let fields = proposal_fields(head);
    match format {
        Format::Json => write!(out, "{{\"suggest\":{{\"proposal\":{{{}", json_fields(&fields)),
        Format::Yaml => write!(out, "suggest:\n  proposal:\n{}", yaml_of(&fields, 4)),
        _ => Ok(()),
    }
}

/// The rules' check, which closes the proposal; then what was learned.
pub(super) fn after_comparison(
    out: &mut dyn Write,
    format: Format,
    r: &Report<'_>,
    shadowed: &[(String, u64)],
) -> io::Result<()> {
    let shadowed = Field::Each(
        "shadowedRuns",
        Box::new(shadowed.iter().map(|(s, n)| json!({"signature": s, "runs": n}))),
    );
    match format {
        Format::Json => {
            out.write_all(b",")?;
            write_fields(out, format, [shadowed], 4)?;
            out.write_all(b"},")?;
            write_fields(out, format, head_fields(r), 2)
        }
        Format::Yaml => {
            write_fields(out, format, [shadowed], 4)?;
            write_fields(out, format, head_fields(r), 2)
        }
        _ => Ok(()),
    }
}

/// The backtest's split, JSON's left open for its comparison.
pub(super) fn backtest_head(out: &mut dyn Write, format: Format, r: &Report<'_>) -> io::Result<()> {
    let Some(b) = &r.backtest else { return Ok(()) };
    let mut m = Map::new();
    m.insert("at".into(), json!(b.at));
    m.insert("trainJobs".into(), json!(b.train_jobs));
    m.insert("testJobs".into(), json!(b.test_jobs));
    match format {
        Format::Json => write!(out, ",\"backtest\":{{{}", json_fields(&m)),
        Format::Yaml => write!(out, "  backtest:\n{}", yaml_of(&m, 4)),
        _ => Ok(()),
    }
}

/// The backtest's figures after its comparison, which close it.
pub(super) fn backtest_tail(out: &mut dyn Write, format: Format, t: &BacktestTail) -> io::Result<()> {
    let mut m = Map::new();
    m.insert("falseKills".into(), json!(t.false_kills));
    m.insert("falseKillJobs".into(), json!(t.false_kill_jobs));
    m.insert("gpuHoursSaved".into(), json!(t.gpu_hours_saved));
    m.insert("estimates".into(), t.estimates.clone().unwrap_or(Value::Null));
    match format {
        Format::Json => write!(out, ",{}}}", json_fields(&m)),
        Format::Yaml => write!(out, "{}", yaml_of(&m, 4)),
        _ => Ok(()),
    }
}

/// The verdict, which ends the record.
pub(super) fn verdict(out: &mut dyn Write, format: Format, r: &Report<'_>, judgement: &Judgement) -> io::Result<()> {
    let mut m = Map::new();
    // Every queue a changed categorizer reaches, before the verdict that weighs them.
    if !r.queues.is_empty() {
        let queues: Vec<Value> = r
            .queues
            .iter()
            .map(|q| {
                json!({
                    "queue": q.queue,
                    "jobs": q.jobs,
                    "changed": q.changed,
                    "rescued": q.rescued,
                    "lost": q.lost,
                    "toPending": q.to_pending,
                    "lostJobs": q.lost_jobs,
                })
            })
            .collect();
        m.insert("queues".into(), Value::Array(queues));
    }
    m.insert(
        "verdict".into(),
        json!({
            "decision": judgement.decision.as_str(),
            "gloss": judgement.decision.gloss(),
            "reasons": judgement.reasons,
        }),
    );
    match format {
        Format::Json | Format::Jsonl => writeln!(out, ",{}}}}}", json_fields(&m)),
        Format::Yaml => write!(out, "{}", yaml_of(&m, 2)),
        _ => Ok(()),
    }
}

/// Why no `onExitCodes` rule splits a merged category's signature: `reason` `noExitCode`,
/// `unnamedContainer` or `sharedExitCode` (with the container, the code and the other
/// signature, `null` past the exit codes counted).
fn unsplit_record(signature: &str, u: &crate::suggest::exits::Unsplit) -> Value {
    use crate::suggest::exits::Unsplit;
    match u {
        Unsplit::NoExitCode => json!({"signature": signature, "reason": "noExitCode"}),
        Unsplit::UnnamedContainer => json!({"signature": signature, "reason": "unnamedContainer"}),
        Unsplit::Shared { container, code, with } => json!({
            "signature": signature,
            "reason": "sharedExitCode",
            "container": container,
            "exitCode": code,
            "sharedWith": with,
        }),
    }
}
