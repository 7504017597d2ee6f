//! What `suggest` prints to be run next (docs/suggest.md): the command that writes the
//! proposal, and the `tune` search of its limits, each carrying both sides' inputs (the
//! history, the baseline, the deployed categorizer) so that they compare what suggest
//! compared.
//!
//! Owns: those command lines, each value one shell word. Must not: print them (that is
//! `output::suggest`) or read anything.

use crate::cli::{ExecutorConfigFormat, MaxContradictions};
use crate::commands::replay::checks::shell_word;
use crate::engine::EngineFrom;
use crate::engine::EngineKind;
use crate::output::suggest as view;
use crate::suggest::propose::{Defaults, Proposed, Verdict, MAX_LIMIT};

use crate::commands::replay::sides::{ReplaySpec, Sides, SidesSpec};

use super::given::{deployed, History, Suggest};
use super::proposal::Proposal;
use super::run::SuggestRun;

/// The command that writes the proposal, and the `tune` search of its limits.
pub(super) fn commands(s: &Suggest, rules: &[Proposed], default: &Defaults, proposal: &Proposal) -> view::Commands {
    let (a, r) = (&s.run, &s.sides.spec);
    let source = source_words(&s.history, r);
    let baseline = baseline_words(&r.sides);
    let (knobs, engine) = knob_words(a, &s.sides);
    let gates = gate_words(a, r);
    let file = format!("{}.yaml", a.name);
    let mut write = vec!["retryctl suggest".to_string()];
    write.extend(source.iter().cloned());
    write.extend(baseline.iter().cloned());
    write.extend(knobs);
    write.extend(gates.iter().cloned());
    write.push("-o policy".to_string());
    match &s.executor_config {
        Some((path, format)) => {
            write.push(format!("--executor-config {}", shell_word(&path.display().to_string())));
            if *format == ExecutorConfigFormat::Helm {
                write.push("--executor-config-format helm".to_string());
            }
        }
        // A proposal for today's Armada is a policy and the executor's config: the line
        // writes both, as the README's route does, run as printed.
        None if proposal.upstream.is_some() => {
            write.push(format!("--executor-config {}", shell_word(&format!("executor-{file}"))));
        }
        None => {}
    }
    write.push(format!("> {file}"));
    let varies = varies(&a.name, rules, default, proposal);
    let tune = (!varies.is_empty()).then(|| {
        let mut t = vec![format!("retryctl tune -f {file}")];
        // A changed categorizer is the cluster's: tune compares every queue too, the
        // others under today's documents (docs/suggest.md "Every queue the change
        // reaches").
        let queue = r.queue.as_deref().map(|q| format!("--queue {}", shell_word(q)));
        let every_queue = proposal.changes_categorizer();
        t.extend(
            source
                .iter()
                .filter(|s| !(every_queue && Some(*s) == queue.as_ref()))
                .cloned(),
        );
        t.extend(baseline.iter().cloned());
        t.extend(engine);
        t.extend(tune_categorizers(&s.sides));
        t.extend(gates);
        t.extend(varies);
        t.join(" ")
    });
    view::Commands {
        write: write.join(" "),
        tune,
    }
}

/// Where the jobs come from, as given: a file (with `--queue`: the same jobs are read), or
/// Lookout's database with its window.
fn source_words(history: &History, r: &ReplaySpec) -> Vec<String> {
    let mut source = Vec::new();
    match history {
        History::File(h) => {
            source.push(format!("--history {}", shell_word(&h.display().to_string())));
            // `--queue` selects the jobs of a file too: the same ones are read.
            if let Some(q) = &r.queue {
                source.push(format!("--queue {}", shell_word(q)));
            }
        }
        History::Lookout(window) => {
            // The DSN holds credentials: never printed, the reader's own variable instead.
            source.push("--lookout-db \"$LOOKOUT_DB\"".to_string());
            if let Some(q) = &r.queue {
                source.push(format!("--queue {}", shell_word(q)));
            }
            for (flag, v) in [
                ("--from", &window.from),
                ("--to", &window.to),
                ("--since", &window.since),
            ] {
                if let Some(v) = v {
                    source.push(format!("{flag} {}", shell_word(v)));
                }
            }
        }
    }
    source
}

/// The baseline, as given.
fn baseline_words(r: &SidesSpec) -> Vec<String> {
    let mut baseline = Vec::new();
    if !r.baseline.is_empty() {
        let files: Vec<String> = r
            .baseline
            .iter()
            .map(|p| shell_word(&p.display().to_string()))
            .collect();
        baseline.push(format!("--baseline {}", files.join(" ")));
    }
    if r.baseline_from_cluster {
        baseline.push("--baseline-from-cluster".into());
    }
    baseline
}

/// What the proposal was learned with, where not the default; and the engine's flag alone.
fn knob_words(a: &SuggestRun, sides: &Sides) -> (Vec<String>, Option<String>) {
    let r = &sides.spec.sides;
    let mut knobs = Vec::new();
    // The engine only as given: else the sides' dialect picks it again, as it did here.
    let engine = (sides.engine_from == EngineFrom::Flag).then(|| format!("--engine {}", sides.engine.as_str()));
    knobs.extend(engine.clone());
    if let Some(c) = &r.baseline_categorizer {
        knobs.push(format!("--categorizer {}", shell_word(&c.display().to_string())));
    }
    if a.min_trials != 20 {
        knobs.push(format!("--min-trials {}", a.min_trials));
    }
    if a.futile != 0.05 {
        knobs.push(format!("--futile {}", a.futile));
    }
    if a.max_limit != 5 {
        knobs.push(format!("--max-limit {}", a.max_limit));
    }
    if a.extrapolate {
        knobs.push("--extrapolate".to_string());
    }
    if a.name != "suggested" {
        knobs.push(format!("--name {}", a.name));
    }
    if a.keep_categorizer {
        knobs.push("--keep-categorizer".to_string());
    }
    if let Some(t) = &sides.spec.backtest_at {
        knobs.push(format!("--backtest-at {}", shell_word(&t.text)));
    }
    (knobs, engine)
}

/// What decides the verdict and what is read, as given: both commands carry them.
fn gate_words(a: &SuggestRun, r: &ReplaySpec) -> Vec<String> {
    let mut gates = Vec::new();
    if a.max_contradictions != MaxContradictions::default() {
        gates.push(format!(
            "--max-contradictions {}",
            shell_word(&a.max_contradictions.to_string())
        ));
    }
    if a.skip_invalid {
        gates.push("--skip-invalid".to_string());
    }
    // What is learned, and the estimates' rates: the incident windows as given.
    if !r.incidents.detect {
        gates.push("--incidents off".to_string());
    }
    for w in &r.incidents.given {
        gates.push(format!("--incident {}/{}", w.from, w.to));
    }
    gates
}

/// tune's `--vary`: the limits of the Retry rules with most hours (two at most: the
/// candidates multiply).
fn varies(name: &str, rules: &[Proposed], default: &Defaults, proposal: &Proposal) -> Vec<String> {
    let mut varies = Vec::new();
    match &proposal.upstream {
        None => {
            // The rules' paths, and a learned Retry default's (the policy's `retryLimit`).
            let mut retry: Vec<(String, &Proposed)> = rules
                .iter()
                .enumerate()
                .filter(|(_, r)| r.limit.is_some())
                .map(|(k, r)| (format!("spec.rules[{k}].retryLimit"), r))
                .collect();
            if let (true, Verdict::Rule(d)) = (default.changes(), &default.verdict) {
                if d.limit.is_some() {
                    retry.push(("spec.retryLimit".to_string(), d));
                }
            }
            retry.sort_by(|a, b| b.1.gpu.cmp(&a.1.gpu).then(b.1.cpu.cmp(&a.1.cpu)));
            for (path, r) in retry.into_iter().take(2) {
                let l = r.limit.unwrap_or(1);
                varies.push(format!(
                    "--vary '{}:{path}={}..{}'",
                    name,
                    l.saturating_sub(2).max(1),
                    (l + 2).min(MAX_LIMIT)
                ));
            }
        }
        Some(u) => {
            if let Some(l) = u.policy_retry_limit {
                varies.push(format!(
                    "--vary '{}:retryLimit={}..{}'",
                    name,
                    l.saturating_sub(2).max(1),
                    (l + 2).min(MAX_LIMIT)
                ));
            }
        }
    }
    varies
}

/// Both sides' categorizers for tune, as suggest compared them (neither side borrows the
/// other's). Upstream, the proposal's is in its file; the baseline's is the deployed one
/// (`--categorizer`, or the one among its files, which tune reads there too), else the
/// recorded categories. Design, the proposal has no categorizer of its own: it decides on
/// the deployed one, given to both sides.
fn tune_categorizers(sides: &Sides) -> Option<String> {
    let word = |p: &std::path::Path| shell_word(&p.display().to_string());
    match (sides.engine, &sides.spec.sides.baseline_categorizer, deployed(sides)) {
        (EngineKind::Upstream, Some(c), _) => Some(format!("--baseline-categorizer {}", word(c))),
        (EngineKind::Upstream, None, Some(_)) => None,
        (EngineKind::Upstream, None, None) => Some("--baseline-categorizer recorded".to_string()),
        (EngineKind::Design, Some(c), _) => {
            Some(format!("--categorizer {} --baseline-categorizer {}", word(c), word(c)))
        }
        (EngineKind::Design, None, Some(d)) => Some(format!("--categorizer {}", shell_word(&d.file.name))),
        (EngineKind::Design, None, None) => None,
    }
}
