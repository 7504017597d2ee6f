//! The candidates' policy sets (docs/tune.md): each candidate of the search that validates
//! and its engine can evaluate, made as it is replayed (its queues the template does not name
//! under `--baseline`'s, its categorizer attached: the template's, or its own when a
//! `categorizer:` vary changes it, one compiled config shared by every candidate that has
//! it), with its scheduler settings when a `scheduler:` vary changes them; the others
//! skipped with their errors.
//!
//! Decision docs/tune.md leaves open: a candidate the engine cannot evaluate (`--engine
//! upstream` and a field upstream cannot store) is skipped with that error, as one whose
//! documents do not validate.
//!
//! Owns: [`Arms`]. Must not: replay (that is `tune::sweep`) or validate a document (that is
//! `tune`'s candidates, as `validate` does).

use std::collections::HashMap;
use std::sync::Arc;

use crate::app::Context;
use crate::commands::replay::policy_set::{policy_set, Unusable};
use crate::commands::replay::sides::{candidate_side, compile, compiled, Sides};
use crate::engine::categorizer::Classifier;
use crate::error::CliError;
use crate::model::Resource;
use crate::output::tune::{error_words, values_words, Skipped};
use crate::replay::policy_sets;
use crate::tune::{CandidateError, Target, Template, Values, Vary};

/// The candidates of a search, in id order: an arm (a policy set, as the sweep replays it)
/// for each one that validates and its engine can evaluate, with its id and values (in the
/// same order); the others skipped with their errors.
pub struct Arms {
    pub sets: Vec<policy_sets::PolicySet>,
    pub ids: Vec<(u64, Values)>,
    pub skipped: Vec<Skipped>,
}

impl Arms {
    /// The candidates of `varies` on `template`, each made as it is replayed against the
    /// baseline of `sides`, with the candidates' categorizer unless it is varied.
    pub fn of(template: &Template, varies: &[Vary], sides: &Sides) -> anyhow::Result<Arms> {
        let categorizer = compiled(sides.candidate().categorizer.as_ref());
        let scheduler_varied = varies.iter().any(|v| v.target == Target::Scheduler);
        // Varied categorizers, one `Arc` per distinct compiled config: the sweep shares a
        // replay only between candidates with the same one (the same `Arc`), so equal configs
        // must be one. Keyed by the compiled config's text, as the partials' fingerprint is.
        let mut compiled: HashMap<String, Arc<Classifier>> = HashMap::new();
        let overrides = &sides.settings.overrides;
        let (mut sets, mut ids, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        for c in template.candidates(varies) {
            if !c.is_valid() {
                skipped.push(Skipped {
                    id: c.id,
                    errors: c.errors(),
                    values: c.values,
                });
                continue;
            }
            let classifier = match &c.categorizer {
                None => categorizer.clone(),
                Some((file, doc)) => {
                    let compiled_one = match &doc.resource {
                        Some(Resource::ErrorCategories(config)) => compile(config),
                        // A valid categorizer document decodes to one: not reached.
                        _ => Err("the varied document is not a categorizer config".to_string()),
                    };
                    match compiled_one {
                        Ok(classifier) => Some(
                            compiled
                                .entry(format!("{classifier:?}"))
                                .or_insert_with(|| Arc::new(classifier))
                                .clone(),
                        ),
                        // Validated already: a safety net, said as the candidate's error.
                        Err(message) => {
                            skipped.push(Skipped {
                                id: c.id,
                                errors: vec![CandidateError {
                                    file: file.clone(),
                                    document: None,
                                    name: None,
                                    path: String::new(),
                                    message,
                                }],
                                values: c.values,
                            });
                            continue;
                        }
                    }
                }
            };
            let set = policy_set(&c.files, sides.spec.sides.retry_policies.as_deref(), sides.engine).and_then(|sim| {
                candidate_side(sim, sides.baseline.given(), classifier)
                    .map_err(|e| Unusable::Invalid(CliError::invalid(e)))
            });
            match set {
                Ok(sim) => {
                    let settings = match (&c.scheduler, scheduler_varied) {
                        (Ok(config), true) => Some(overrides.apply(config)),
                        _ => None,
                    };
                    sets.push(policy_sets::PolicySet {
                        name: String::new(),
                        simulator: sim,
                        settings,
                    });
                    ids.push((c.id, c.values));
                }
                Err(Unusable::Unreadable(fields)) => skipped.push(Skipped {
                    id: c.id,
                    errors: fields
                        .iter()
                        .map(|f| CandidateError {
                            file: String::new(),
                            document: None,
                            name: None,
                            path: f.trim().to_string(),
                            message: "the upstream engine cannot evaluate this field (upstream Armada cannot store it)"
                                .into(),
                        })
                        .collect(),
                    values: c.values,
                }),
                Err(Unusable::Invalid(e)) => return Err(e.into()),
            }
        }
        Ok(Arms { sets, ids, skipped })
    }

    /// `Err` when no candidate is left to sweep: none of the `n` validates. The first five
    /// skipped are said on stderr, each with its first error.
    pub fn some_validate(&self, ctx: &mut Context, n: u128) -> anyhow::Result<()> {
        if !self.sets.is_empty() {
            return Ok(());
        }
        for s in self.skipped.iter().take(5) {
            let first = s.errors.first().map_or(String::new(), error_words);
            writeln!(
                ctx.err,
                "{}: candidate {} ({}): {first}",
                ctx.style.error("error"),
                s.id,
                values_words(&s.values)
            )?;
        }
        Err(CliError::invalid(format!(
            "every candidate was skipped: none of the {n} validates (`-o json` of a smaller search lists each one's errors)"
        ))
        .into())
    }
}
