//! `retryctl tune`: which retry policy should this cluster run? (docs/tune.md)
//!
//! Load (the template, its varies checked and counted before anything else, each candidate's
//! documents, the baseline) → `tune::sweep` over the history source `commands::replay::source` opens →
//! `tune::rank` → `output::tune`. `--pick N` without a history writes candidate N's documents
//! without a replay; given one, it searches as `--pick recommended` does, and writes candidate
//! N unless N loses a job the baseline saves or breaks a constraint (then exit 1, nothing
//! written; `--force` writes it with a warning), or the search finds the baseline does not
//! explain the record (exit 1; `--force` writes it headed by that reject verdict, which
//! `apply` refuses unless forced). A pick of a template headed by a reject verdict begins
//! with that verdict too.
//! Must not: replay, count, rank or format itself.
//!
//! Decisions docs/tune.md leaves open:
//! - without `--baseline` or `--baseline-from-cluster` the baseline is the template as written,
//!   with the template's scheduler config;
//! - a candidate the engine cannot evaluate (`--engine upstream` and a field upstream cannot
//!   store) is skipped with that error, as one whose documents do not validate;
//! - `--pick` prints the candidate's policy and queue documents in their own dialect (the
//!   encoder `get -o yaml` uses: comments and key order are the canonical ones), separated
//!   by `---`; the varied scheduler settings, which `apply` does not take, are said on stderr;
//! - the command that writes a candidate names the template files, the scheduler config, the
//!   categorizer and the varies (what makes the documents), not the history: `--pick N` needs
//!   none;
//! - `--pick N` with a history and `--shard`: refused as `--pick recommended` is (a shard's
//!   jobs alone cannot say what N loses); a candidate that does not validate is refused
//!   before the replay;
//! - `--pick template` is `--pick N` with N the candidate whose varied values are the
//!   template's own as written (`unset` for a field it leaves out), found before anything
//!   is replayed; none is exit 1, naming the vary that does not list the template's value.

use std::path::Path;

use crate::app::Context;
use crate::cli::{ContentionArg, TuneArgs, TuneOutput};
use crate::commands::replay::checks::{
    backtest_refusal, contention_in_one_process, parse_max_compute, said_after_replay, shell_word,
};
use crate::commands::replay::held::Held;
use crate::commands::replay::lookout::SET_LOOKOUT_DB;
use crate::commands::replay::policy_set::{policy_set, Unusable};
use crate::commands::replay::sides::{
    candidate_side, compile, compiled, resolve, BaselinePolicies, CandidateFrom, ReplaySpec, Sides, SidesSpec,
};
use crate::commands::replay::source::{self, check_flags, About, Open};
use crate::engine::categorizer::Classifier;
use crate::error::{CliError, ExitCode};
use crate::input::SourceFile;
use crate::model::encode::{policy_document, queue_document, to_yaml};
use crate::model::Resource;
use crate::output::mode::Baseline;
use crate::output::progress::progress_bar;
use crate::output::records::render_change;
use crate::output::stderr::{invalid_text, Stderr};
use crate::output::text::shown;
use crate::output::tune::{self as view, BaselineFrom, Skipped, StderrListener, TuneView};
use crate::output::Format;
use crate::replay::estimate::Rates;
use crate::replay::explained::MaxContradictions;
use crate::replay::partial::{fingerprint, Header, Recorder};
use crate::replay::run::{CompareTally, Options};
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Tap;
use crate::replay::sides::{self as policy_sets, PolicySets};
use crate::replay::source::HistorySource;
use crate::tune::rank::{rank, Constraints, MaxCompute, Ranked};
use crate::tune::sweep::{shares_matching, sweep, sweep_partial, BaselineTally, Swept};
use crate::tune::{count, parse_vary, Candidate, CandidateError, Target, Template, Values, Vary};
use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub mod shards;

/// The most candidates `--contention auto` computes the section for (docs/contention.md "Cost").
pub const AUTO_CONTENTION_CANDIDATES: u128 = 100;

/// `--pick`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    Id(u64),
    /// The candidate whose varied values are the template's own, as written: an id once the
    /// template is read.
    Template,
    Recommended,
}

pub fn run(ctx: &mut Context, args: &TuneArgs) -> anyhow::Result<ExitCode> {
    let replay = &args.replay;
    let Checked {
        varies,
        pick,
        format,
        max_compute,
        sides,
    } = check(args)?;
    let history = replay.history.is_some() || replay.lookout_db.is_some();
    // The template (its documents valid), the baseline and both categorizers, before any work.
    let Some(mut sides) = resolve(ctx, sides)? else {
        return Ok(ExitCode::InvalidInput);
    };
    // A template `suggest` rejected heads every pick with that verdict (docs/tune.md
    // "Writing the choice"): a pick is never cleaner than what it was made from.
    let mut rejects: Vec<String> = Vec::new();
    for reason in sides.candidate().files.iter().flat_map(SourceFile::rejected) {
        if !rejects.iter().any(|r| r == reason) {
            rejects.push(reason.to_string());
        }
    }
    let mut template = Template::new(sides.candidate().files.clone(), sides.settings.source.clone());
    if let Some(c) = &sides.candidate().categorizer {
        template = template.with_categorizer(c.file.name.clone(), c.file.document.clone());
    }
    // The template's varies right, its size bounded.
    template.check(&varies).map_err(CliError::usage)?;
    let n = count(&varies);
    if n > u128::from(args.max_candidates) {
        return Err(CliError::usage(format!(
            "the varies make {n} candidates, more than --max-candidates {}",
            args.max_candidates
        ))
        .with_hint("vary fewer values (a range with a step: `0..100/10`), or raise --max-candidates")
        .into());
    }
    // `--contention auto` over many candidates: every candidate's retries and waits go through
    // the one sort, whose temporary file grows with candidates × the history's edges (a
    // thousand candidates over a million edges: about 45 GB), so past this many the section
    // waits to be asked for (docs/contention.md "Cost"). Said, never silently left out.
    if replay.contention == ContentionArg::Auto && sides.spec.contention && n > AUTO_CONTENTION_CANDIDATES {
        sides.spec.contention = false;
        writeln!(
            ctx.err,
            "note: contention: not computed for {n} candidates (more than {AUTO_CONTENTION_CANDIDATES}: each one's retries and waits would be sorted on disk); pass --contention on to compute it"
        )?;
    }
    let pick_command = pick_command(args);
    let pick = match pick {
        // Like `--pick N`, with N the template's own candidate (docs/tune.md "Writing the
        // choice").
        Some(Pick::Template) => Some(Pick::Id(
            template
                .own_candidate(&varies)
                .map_err(|why| CliError::failed(format!("`--pick template`: {why}")))?,
        )),
        other => other,
    };
    if let Some(Pick::Id(id)) = pick {
        if id == 0 || u128::from(id) > n {
            return Err(CliError::usage(format!("`--pick {id}`: the candidates are numbered 1 to {n}")).into());
        }
        let candidate = template.candidate(&varies, id);
        // Without a history, nothing to replay: the documents as they are. With one (or
        // when they do not validate, which `write_candidate` says), the search first.
        if !history || !candidate.is_valid() {
            return write_candidate(ctx, &candidate, &varies, &rejects);
        }
    }
    let (arms, ids, skipped) = candidates(&template, &varies, &sides)?;
    if arms.is_empty() {
        for s in skipped.iter().take(5) {
            let first = s.errors.first().map_or(String::new(), error_words);
            writeln!(
                ctx.err,
                "{}: candidate {} ({}): {first}",
                ctx.style.error("error"),
                s.id,
                values_words(&s.values)
            )?;
        }
        return Err(CliError::invalid(format!(
            "every candidate was skipped: none of the {n} validates (`-o json` of a smaller search lists each one's errors)"
        ))
        .into());
    }
    let from = match sides.baseline.policies {
        BaselinePolicies::Cluster => BaselineFrom::Cluster,
        BaselinePolicies::Template(_) => BaselineFrom::Template,
        _ => BaselineFrom::Files,
    };
    let varied: Vec<(String, Vec<String>)> = varies
        .iter()
        .map(|v| (v.text.clone(), v.values.iter().map(ToString::to_string).collect()))
        .collect();
    let run = TuneRun {
        command: "tune".into(),
        spec: sides.spec.clone(),
        ids,
        skipped,
        varied,
        columns: template.columns(&varies),
        baseline_from: from,
        max_lost: args.max_lost,
        max_compute: args.max_compute.clone(),
        max_contradictions: args.max_contradictions,
        pick_command,
        exit_code: args.exit_code,
        retry_policy: replay.scheduler.retry_policies.is_some(),
        given: arms.first().map(|a| a.simulator.given().to_vec()).unwrap_or_default(),
        categorized: sides.candidate().categorizer.is_some() || sides.baseline.categorizer.is_some(),
        skip_invalid: replay.skip_invalid,
        scheduler: sides.settings.assumed(),
    };
    let mut tune = Tune {
        format,
        pick,
        force: args.force,
        rejects,
        run,
        max_compute,
        options: Options {
            backtest_at: sides.spec.backtest_time(),
            shard: replay.shard,
            explain: sides.baseline.explains(),
            incidents: sides.spec.look().clone(),
            contention: sides.spec.contention,
            contention_sharded: sides.spec.contention_sharded,
        },
        template: &template,
        varies: &varies,
    };
    let open = Open {
        replay,
        partial: format == Some(TuneOutput::Partial),
        strict: false,
        nothing: "nothing to compare",
    };
    let Some(opened) = source::open(ctx, &sides, open)? else {
        return Ok(ExitCode::InvalidInput);
    };
    // The baseline the source opened (the cluster's, or the sides' own) and the candidates.
    let sets = opened.baseline.and_then(|b| sides.policy_sets(Some(b), Some(arms)));
    let code = tune.drive(ctx, opened.source, sets, opened.from, opened.about)?;
    opened.end.finish(ctx, code)
}

/// What tune's flags say, checked.
pub struct Checked {
    varies: Vec<Vary>,
    pick: Option<Pick>,
    /// `None`: `--pick` (its YAML).
    format: Option<TuneOutput>,
    max_compute: Option<MaxCompute>,
    /// The sides its flags name (the template and the baseline), and its replay.
    sides: ReplaySpec,
}

/// The checks of tune's flags before anything is read, in the same words for a run and for
/// `--emit`: what needs the inputs (the documents, the template's varies) is checked by the
/// command once it has them.
pub fn check(args: &TuneArgs) -> Result<Checked, CliError> {
    let replay = &args.replay;
    check_flags(replay, &args.source.files)?;
    let varies = parse_varies(args)?;
    let pick = args.pick.as_deref().map(parse_pick).transpose()?;
    let format = match (pick, args.output) {
        (Some(_), None | Some(TuneOutput::Yaml)) => None,
        (Some(_), Some(_)) => {
            return Err(CliError::usage(
                "`--pick` writes the candidate's documents as YAML: give `-o yaml`",
            ))
        }
        (None, o) => Some(o.unwrap_or(TuneOutput::Table)),
    };
    let history = replay.history.is_some() || replay.lookout_db.is_some();
    if !matches!(pick, Some(Pick::Id(_) | Pick::Template)) && !history {
        let e = CliError::usage("give the history to search on: `--history PATH` or `--lookout-db DSN --queue Q`");
        // `--emit` reads no variable: its jobs get the DSN from a Secret.
        return Err(if args.emit.emit.is_none() {
            e.with_hint(SET_LOOKOUT_DB)
        } else {
            e
        });
    }
    match (pick, replay.shard) {
        // A shard ranks its own jobs only: its recommendation is not the cluster's.
        (Some(Pick::Recommended), Some(shard)) => {
            return Err(CliError::usage(format!(
                "`--pick recommended` with `--shard {shard}`: a shard's jobs alone recommend nothing for the cluster; run every shard with `-o partial`, `retryctl merge` them, then `--pick ID` the candidate it recommends"
            )))
        }
        (Some(Pick::Id(id)), Some(shard)) if history => {
            return Err(CliError::usage(format!(
                "`--pick {id}` with `--shard {shard}` and a history: a shard's jobs alone cannot say what candidate {id} loses against the baseline; give `--pick {id}` without the history and `--shard`, or search without `--shard`"
            )))
        }
        (Some(Pick::Template), Some(shard)) if history => {
            return Err(CliError::usage(format!(
                "`--pick template` with `--shard {shard}` and a history: a shard's jobs alone cannot say what the template's candidate loses against the baseline; give `--pick template` without the history and `--shard`, or search without `--shard`"
            )))
        }
        _ => {}
    }
    let max_compute = args.max_compute.as_deref().map(parse_max_compute).transpose()?;
    let sides = ReplaySpec::of(
        replay,
        SidesSpec::of(
            replay,
            CandidateFrom::Template(args.source.files.clone()),
            args.source.recursive,
            args.categorizer.clone(),
            args.baseline_categorizer.clone(),
        ),
        replay.shard.is_some() || args.emit.emit.is_some(),
    )?;
    if args.source.files.is_empty() {
        return Err(CliError::usage("give the template's documents with `-f PATH`"));
    }
    contention_in_one_process(sides.contention, replay.shard.is_some(), args.emit.emit.is_some())?;
    Ok(Checked {
        varies,
        pick,
        format,
        max_compute,
        sides,
    })
}

/// `--vary`, each parsed.
fn parse_varies(args: &TuneArgs) -> Result<Vec<Vary>, CliError> {
    args.vary
        .iter()
        .map(|v| parse_vary(v))
        .collect::<Result<Vec<Vary>, String>>()
        .map_err(CliError::usage)
}

/// The candidates: an arm for each one that validates and its engine can evaluate, with its
/// id and values (in the same order); the others skipped with their errors.
type Built = (Vec<policy_sets::Candidate>, Vec<(u64, Values)>, Vec<Skipped>);

/// The candidates of `varies` ([`Built`]).
fn candidates(template: &Template, varies: &[Vary], sides: &Sides) -> anyhow::Result<Built> {
    let categorizer = compiled(sides.candidate().categorizer.as_ref());
    let scheduler_varied = varies.iter().any(|v| v.target == Target::Scheduler);
    // Varied categorizers, one `Arc` per distinct compiled config: the sweep shares a
    // replay only between candidates with the same one (the same `Arc`), so equal configs
    // must be one. Keyed by the compiled config's text, as the partials' fingerprint is.
    let mut compiled: HashMap<String, Arc<Classifier>> = HashMap::new();
    let overrides = &sides.settings.overrides;
    let (mut arms, mut ids, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
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
            candidate_side(sim, sides.baseline.given(), classifier).map_err(|e| Unusable::Invalid(CliError::invalid(e)))
        });
        match set {
            Ok(sim) => {
                let settings = match (&c.scheduler, scheduler_varied) {
                    (Ok(config), true) => Some(overrides.apply(config)),
                    _ => None,
                };
                arms.push(policy_sets::Candidate {
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
    Ok((arms, ids, skipped))
}

/// The sweep, the ranking and the output, over the source `commands::replay::source` opened.
struct Tune<'a> {
    /// `None`: `--pick`.
    format: Option<TuneOutput>,
    pick: Option<Pick>,
    /// `--force`: write a pick that loses a job or breaks a constraint, or that a search
    /// whose baseline does not explain the record made.
    force: bool,
    /// The reasons of the reject verdict heading the template (`suggest -o policy`'s): every
    /// pick begins with that verdict.
    rejects: Vec<String>,
    run: TuneRun,
    max_compute: Option<MaxCompute>,
    options: Options,
    template: &'a Template,
    varies: &'a [Vary],
}

/// What `merge` needs to print what `tune` prints, besides the tallies: a partial result's
/// `run` (docs/past-one-machine.md). Every field changes the output, so the fingerprint holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TuneRun {
    /// Always `tune`.
    pub command: String,
    /// What the replay flags said (the template and the baseline, `--queue`,
    /// `--backtest-at`, `--incidents`).
    pub spec: ReplaySpec,
    /// The candidates swept, by id, with their values (in the order of the tallies).
    pub ids: Vec<(u64, Values)>,
    pub skipped: Vec<Skipped>,
    /// Each vary as typed, and its values as typed.
    pub varied: Vec<(String, Vec<String>)>,
    /// Each vary's column in the tables (`Template::columns`).
    pub columns: Vec<String>,
    pub baseline_from: BaselineFrom,
    pub max_lost: u64,
    /// `--max-compute` as typed.
    pub max_compute: Option<String>,
    #[serde(default)]
    pub max_contradictions: MaxContradictions,
    pub pick_command: String,
    pub exit_code: bool,
    /// `--retry-policy` was given.
    pub retry_policy: bool,
    /// The policies a job gets when its queue is not among the documents.
    pub given: Vec<String>,
    /// A side classifies runs with the executor's categorizer: the candidates' collisions
    /// are reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub categorized: bool,
    /// `--skip-invalid`: entries not replayed are counted and said, and exit 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_invalid: bool,
    /// What the replay assumed of the scheduler, said on stderr (`Settings::assumed`): the
    /// merge says it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
}

impl Tune<'_> {
    /// The sweep of `sets` (the baseline, its categorizer attached, and the candidates) over `source`, then the
    /// ranking and the output, the pick, or the partial.
    fn drive<S: HistorySource>(
        &mut self,
        ctx: &mut Context,
        source: S,
        sets: Option<PolicySets>,
        from: Baseline,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let Some(sets) = sets else {
            return Err(CliError::usage("no baseline to compare the candidates with").into());
        };
        if from == Baseline::Cluster {
            self.run.baseline_from = BaselineFrom::Cluster;
        }
        let shared = shares_matching(self.varies);
        if self.format == Some(TuneOutput::Partial) {
            return self.write_partial(ctx, source, &sets, shared, about);
        }
        let mut listener = StderrListener(
            Stderr::new(
                &mut *ctx.err,
                ctx.style,
                progress_bar(source.progress()),
                self.run.retry_policy,
            )
            .skipping(self.run.skip_invalid),
        );
        let swept = sweep(source, &sets, shared, &self.options, &mut listener)?;
        listener.0.finish()?;
        let swept = match swept {
            Ok(s) => s,
            Err(refused) => return Err(backtest_refusal(&refused, self.run.spec.backtest_text()).into()),
        };
        let (Some(format), None) = (self.format, self.pick) else {
            return self.pick(ctx, swept);
        };
        finish(
            ctx,
            swept,
            &self.run,
            self.max_compute,
            Format::from(format),
            self.options.shard,
        )
    }
}

impl Tune<'_> {
    /// `--pick recommended`: the recommended candidate's documents. `--pick ID` (given a
    /// history): candidate ID's; one that loses a job the baseline saves or breaks a
    /// constraint is refused (exit 1), or with `--force` written with a warning
    /// (`output::tune::{pick_refusal, pick_warning}`).
    fn pick(&mut self, ctx: &mut Context, swept: Swept) -> anyhow::Result<ExitCode> {
        let errors_code = said_after_replay(
            &mut *ctx.err,
            ctx.style,
            &swept.recorded,
            swept.errors,
            self.run.skip_invalid,
        )?
        .unwrap_or(ExitCode::Success);
        let ranked = ranking(swept.arms, &self.run, self.max_compute, &swept.baseline, &swept.rates);
        let mut rejects = self.rejects.clone();
        let (id, warning) = match self.pick {
            Some(Pick::Id(id)) => {
                // The search found the baseline does not explain the record: nothing it
                // measured holds, so the pick is refused as `--pick recommended` is, or
                // forced and written headed by that reject.
                if let (Some(e), true) = (&ranked.baseline.explained, ranked.baseline.unexplained) {
                    if !self.force {
                        return Err(CliError::failed(view::pick_unexplained_refusal(id, e))
                            .with_hint(view::PICK_UNEXPLAINED_HINT)
                            .into());
                    }
                    rejects.push(e.unexplained_words());
                }
                let at = ranked.candidates.iter().position(|c| c.id == id);
                let max_compute = self.run.max_compute.as_deref();
                // A pick that loses a job or breaks a constraint is not written unless
                // forced: a script under `set -e` stops here (docs/tune.md "Picking a
                // candidate").
                if let (Some(i), false) = (at, self.force) {
                    if let Some(refusal) = view::pick_refusal(&ranked, i, max_compute) {
                        return Err(CliError::failed(refusal).into());
                    }
                }
                (id, at.and_then(|i| view::pick_warning(&ranked, i, max_compute)))
            }
            _ => match ranked.recommended {
                Some(i) => (ranked.candidates[i].id, None),
                None => {
                    writeln!(
                        ctx.err,
                        "{}: no candidate is recommended: {}",
                        ctx.style.error("error"),
                        view::none_recommended(&ranked, "none")
                    )?;
                    return Ok(ExitCode::Failure);
                }
            },
        };
        let code = write_candidate(ctx, &self.template.candidate(self.varies, id), self.varies, &rejects)?;
        if let Some(warning) = warning {
            writeln!(ctx.err, "{}: {warning}", ctx.style.warning("warning"))?;
        }
        Ok(if code != ExitCode::Success {
            code
        } else if errors_code != ExitCode::Success {
            errors_code
        } else if self.run.exit_code && ranked.recommended.is_some() {
            // `--exit-code` means one thing, with or without `--pick`: a candidate is
            // recommended.
            ExitCode::Failure
        } else {
            ExitCode::Success
        })
    }

    /// `-o partial`: the shard's tallies and the jobs to list, for `merge`. Exit 0 once it
    /// is written: the verdict is the merge's.
    fn write_partial<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        sets: &PolicySets,
        shared: bool,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let shard = self.options.shard.unwrap_or(Shard::WHOLE);
        let arms: Vec<serde_json::Value> = sets
            .candidates
            .iter()
            .map(|a| serde_json::json!([a.simulator.fingerprint(), a.settings.as_ref().map(|s| format!("{s:?}"))]))
            .collect();
        let inputs = serde_json::json!({
            "run": self.run,
            "shards": shard.count,
            "baseline": sets.baseline.fingerprint(),
            "arms": arms,
            "source": about.source,
        });
        let header = Header::new(shard, fingerprint(&inputs), serde_json::to_value(&self.run)?);
        let mut rec = Recorder::new(&mut *ctx.out, &header, invalid_text, render_change)?;
        let (source, noted) = Tap::new(source);
        let tallies = sweep_partial(source, sets, shared, &self.options, &mut rec)?;
        if !about.interrupted() {
            rec.job_ids(noted.take());
            rec.end(about.digest.get(), tallies, about.lookout())?;
        }
        Ok(ExitCode::Success)
    }
}

/// The candidates ranked under the run's constraints.
fn ranking(
    arms: Vec<CompareTally>,
    run: &TuneRun,
    max_compute: Option<MaxCompute>,
    baseline: &BaselineTally,
    rates: &Rates,
) -> Ranked {
    let candidates: Vec<_> = run
        .ids
        .iter()
        .cloned()
        .zip(arms)
        .map(|((id, values), tally)| (id, values, tally))
        .collect();
    let constraints = Constraints {
        max_lost: run.max_lost,
        max_compute,
        max_contradictions: run.max_contradictions,
    };
    rank(candidates, baseline, rates, &constraints)
}

/// The sweep's answer in `format` (held until whole, so that a closed stdout is not an
/// error), and the exit status: entries not replayed 3, a recommendation with
/// `--exit-code` 1. `shard`: the one shard of `--shard I/N` these numbers are of; `merge`
/// ends a sharded tune here too, with `None`.
pub fn finish(
    ctx: &mut Context,
    swept: Swept,
    run: &TuneRun,
    max_compute: Option<MaxCompute>,
    format: Format,
    shard: Option<Shard>,
) -> anyhow::Result<ExitCode> {
    let ranked = ranking(swept.arms, run, max_compute, &swept.baseline, &swept.rates);
    let view = TuneView {
        ranked: &ranked,
        jobs: swept.jobs,
        errors: swept.errors,
        baseline_from: run.baseline_from,
        varied: &run.varied,
        columns: &run.columns,
        skipped: &run.skipped,
        max_lost: run.max_lost,
        max_compute: run.max_compute.as_deref(),
        backtest: swept.backtest.as_ref(),
        incidents: swept.incidents.as_ref(),
        pick_command: &run.pick_command,
        categorized: run.categorized,
        shard,
    };
    let mut held = Held::default();
    view::write(format, &view, ctx.style, &mut held)?;
    held.release(&mut *ctx.out)?;
    let not_replayed = said_after_replay(
        &mut *ctx.err,
        ctx.style,
        &swept.recorded,
        swept.errors,
        run.skip_invalid,
    )?;
    Ok(if let Some(code) = not_replayed {
        code
    } else if run.exit_code && ranked.recommended.is_some() {
        ExitCode::Failure
    } else {
        ExitCode::Success
    })
}

fn parse_pick(text: &str) -> Result<Pick, CliError> {
    match text {
        "recommended" => return Ok(Pick::Recommended),
        "template" => return Ok(Pick::Template),
        _ => {}
    }
    text.parse::<u64>().map(Pick::Id).map_err(|_| {
        CliError::usage(format!(
            "invalid `--pick` `{text}`: expected a candidate's id (a number from the output's ID column), `template` or `recommended`"
        ))
    })
}

/// The command that writes a candidate, up to `--pick`: what makes the documents (the
/// template, the scheduler config, the categorizer, the varies), each argument quoted for a POSIX shell.
fn pick_command(args: &TuneArgs) -> String {
    let mut words = vec!["retryctl".to_string(), "tune".to_string()];
    for f in &args.source.files {
        words.push("-f".into());
        words.push(shell_word(&path_text(f)));
    }
    if args.source.recursive {
        words.push("-R".into());
    }
    if let Some(s) = &args.replay.scheduler.scheduler_config {
        words.push("--scheduler-config".into());
        words.push(shell_word(&path_text(s)));
    }
    // A `categorizer:` vary is checked against the file: `--pick` needs it too.
    if let Some(c) = &args.categorizer {
        words.push("--categorizer".into());
        words.push(shell_word(&path_text(c)));
    }
    for v in &args.vary {
        words.push("--vary".into());
        words.push(shell_word(v));
    }
    words.join(" ")
}

fn path_text(p: &Path) -> String {
    p.display().to_string()
}

fn values_words(values: &[(String, String)]) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn error_words(e: &CandidateError) -> String {
    let at = match (&e.name, e.path.is_empty()) {
        (Some(n), false) => format!("policy `{n}`: {}: ", e.path),
        (Some(n), true) => format!("policy `{n}`: "),
        (None, false) => format!("{}: ", e.path),
        (None, true) => String::new(),
    };
    format!("{at}{}", e.message)
}

/// A candidate's documents as YAML on stdout (each in its own dialect), or its errors.
fn write_candidate(ctx: &mut Context, c: &Candidate, varies: &[Vary], rejects: &[String]) -> anyhow::Result<ExitCode> {
    if !c.is_valid() {
        for e in c.errors() {
            writeln!(
                ctx.err,
                "{}: {}: {}",
                ctx.style.error("error"),
                shown(&e.file),
                shown(&error_words(&e))
            )?;
        }
        return Err(CliError::invalid(format!(
            "candidate {} ({}) does not validate; nothing was written",
            c.id,
            values_words(&c.values)
        ))
        .into());
    }
    let mut docs = Vec::new();
    for file in &c.files {
        docs.extend(documents(file)?);
    }
    let mut text = docs.join("---\n");
    if !rejects.is_empty() {
        // Its first line, where `apply` reads a reject, as `suggest -o policy` writes one.
        text.insert_str(0, &view::pick_verdict_line(rejects));
        writeln!(
            ctx.err,
            "{}: {}",
            ctx.style.warning("warning"),
            view::pick_rejected_warning(c.id, rejects)
        )?;
    }
    ctx.out.write_all(text.as_bytes())?;
    let scheduler: Vec<String> = varies
        .iter()
        .zip(&c.values)
        .filter(|(v, _)| v.target == Target::Scheduler)
        .map(|(v, (_, value))| format!("{}={value}", v.path))
        .collect();
    let categorizer: Vec<String> = varies
        .iter()
        .zip(&c.values)
        .filter(|(v, _)| v.target == Target::Categorizer)
        .map(|(v, (_, value))| format!("{}={value}", v.path))
        .collect();
    if !categorizer.is_empty() {
        writeln!(
            ctx.err,
            "note: candidate {} also sets the categorizer config ({}): set it in the executor's config; `apply` does not take it",
            c.id,
            categorizer.join(", ")
        )?;
    }
    if !scheduler.is_empty() {
        writeln!(
            ctx.err,
            "note: candidate {} also sets the scheduler config ({}): set it in the scheduler's own config; `apply` does not take it",
            c.id,
            scheduler.join(", ")
        )?;
    }
    Ok(ExitCode::Success)
}

/// The YAML of each policy and queue of `file`, as `get -o yaml` writes them.
fn documents(file: &SourceFile) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for doc in &file.documents {
        let value = match &doc.resource {
            Some(Resource::RetryPolicy(p)) => {
                let version = doc.api_version.unwrap_or(crate::model::ApiVersion::V1);
                policy_document(p, version).map_err(|fields| {
                    CliError::invalid(format!(
                        "policy `{}` does not fit its dialect `{}`: {}",
                        p.name,
                        version.as_str(),
                        fields.join(", ")
                    ))
                })?
            }
            Some(Resource::Queue(q)) => queue_document(q),
            _ => continue,
        };
        out.push(to_yaml(&value));
    }
    Ok(out)
}
