//! A sharded `suggest` (docs/past-one-machine.md): what a shard's partial records of its
//! pass 1 (`SuggestRun`, and `suggest::learn::ShardLearning`), the shards' pass 1 folded in the source's order
//! ([`SuggestFold`]), and `merge`'s end of it ([`merge`]): the inputs loaded again and found
//! unchanged, then the rest as one process does it (`conclude`). Must not: learn,
//! propose, compare or render by itself (the command's own code does).

use crate::app::Context;
use crate::cli::{MergeArgs, MergeOutput, SuggestOutput};
use crate::commands::replay::merged::{add_totals, check_all, damaged, not_an_output, problem, read_error, run_of};
use crate::commands::replay::sides::resolve;
use crate::commands::replay::source::{left_out_note, FileSource};
use crate::error::ExitCode;
use crate::output::mode::Baseline;
use crate::replay::partial::counts::{Counts, Sums};
use crate::replay::partial::fingerprint;
use crate::replay::partial::{decode_learned, Partial};
use crate::suggest::learn::{Learning, ShardLearning};
use crate::suggest::stats::PastSignature;

use super::check::{check_knobs, check_queue};
use super::conclude::conclude;
use super::given::{fingerprint_inputs, History, Suggest};
use super::learn::{learn, Pass1};
use super::run::SuggestRun;

/// The shards' pass 1 folded as one process folds its units: in the source's order (shard
/// order, for byte ranges), so that the signatures kept are the first 10,000 met.
#[derive(Default)]
pub struct SuggestFold(Learning);

impl SuggestFold {
    /// Adds the next shard's learning. `Err`: what is wrong with it (after the file's name).
    pub fn add(&mut self, t: ShardLearning) -> Result<(), String> {
        self.0.add_shard(t)
    }

    /// Adds a later shard's counts of a signature past its first 10,000 (an entry of its
    /// partial), once every shard's learning is added. `Err`: what is wrong with it.
    pub fn add_past(&mut self, past: PastSignature) -> Result<(), String> {
        self.0.add_past(past)
    }
}

/// What the shards of a sharded suggest were, for its merge to find its own inputs theirs.
pub struct Shards<'a> {
    pub count: u64,
    pub fingerprint: &'a str,
    /// The history's digest the shards recorded.
    pub source: Option<&'a str>,
}

/// Why a merge of suggest's partials stops before its answer: the words after the first
/// partial's name (exit 3, as merge's other problems).
#[derive(Debug)]
pub struct Unmergeable(pub String);

impl std::fmt::Display for Unmergeable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unmergeable {}

/// The end of a sharded suggest, once its shards' learning is folded: the sides resolved
/// again from the shards' run (and found unchanged), then the rest as one process does it
/// (`conclude`): the proposal, and pass 2 over the history.
fn conclude_merged(
    ctx: &mut Context,
    run: &SuggestRun,
    fold: SuggestFold,
    output: SuggestOutput,
    shards: Shards<'_>,
) -> anyhow::Result<ExitCode> {
    // The merge's `-o policy` writes the shards' `--queue` as a Queue: its flag, refused alike.
    check_queue(run.spec.queue.as_deref(), output)?;
    // What the shard's own checks accepted: another run was written in by hand.
    let knobs = check_knobs(run.min_trials, run.futile, run.max_limit, run.extrapolate, &run.name)
        .map_err(|e| Unmergeable(format!("is damaged: its run: {}", e.message)))?;
    let Some(sides) = resolve(ctx, run.spec.clone())? else {
        return Ok(ExitCode::InvalidInput);
    };
    let suggest = Suggest {
        run: run.clone(),
        knobs,
        output,
        history: History::File(run.history.clone()),
        shard: None,
        sides,
        merged: true,
        allow_empty: false,
        // merge writes its one output: the executor config is `-o policy`'s first document.
        executor_config: None,
    };
    // A shard's baseline is files (`check_sharded`), read again here with their categorizer,
    // or no policy.
    let Some(baseline) = suggest.sides.baseline.simulator().cloned() else {
        return Err(Unmergeable("is damaged: its run's baseline is neither files nor none".into()).into());
    };
    let FileSource {
        mut files, described, ..
    } = FileSource::open(&suggest.sides, &run.history)?;
    let inputs = fingerprint_inputs(&suggest.run, &suggest.sides, &baseline, shards.count, &described);
    if fingerprint(&inputs) != shards.fingerprint {
        return Err(Unmergeable(
            "is of inputs that changed since its shards read them: the baseline, the categorizer or the scheduler config at the paths its run names are not the same (the fingerprint differs); merge where the shards' inputs are, unchanged"
                .into(),
        )
        .into());
    }
    let digest = files.digest().get().map(|d| format!("{d:016x}"));
    if digest.as_deref() != shards.source {
        return Err(Unmergeable(format!(
            "was made from another history than `{}` is now (the history's digest differs: was it changed since the shards read it?)",
            run.history.display()
        ))
        .into());
    }
    let mut pass = Pass1::merged(fold.0);
    let learning = &pass.learning;
    if learning.train_jobs + learning.test_jobs == 0 && learning.errors > 0 {
        // No job replayed: no pass 2 will say why each entry was not read. Pass 1 over the
        // history again says it, with its file, line and reason, as one process does.
        let at = suggest.sides.spec.backtest_time();
        pass.unsaid = learn(ctx.style, files, &baseline, at, suggest.sides.spec.look(), None)?.unsaid;
    }
    let other_queues = pass.learning.other_queues;
    let done = conclude(ctx, &suggest, &baseline, Baseline::Files, pass)?;
    // The shards' jobs of other queues than `--queue`, said as one process says them.
    if let Some(queue) = run.spec.queue.as_deref().filter(|_| other_queues > 0) {
        writeln!(
            ctx.err,
            "note: {}",
            left_out_note(queue, other_queues, done.every_queue)
        )?;
    }
    Ok(done.code)
}

/// A sharded suggest's partials: their learning folded in shard order (byte ranges: the
/// source's, so the signatures kept are the first met), then the rest of suggest, as one
/// process does it (`conclude_merged`: it reads the history again for its comparison).
pub fn merge(ctx: &mut Context, args: &MergeArgs, partials: &mut [Partial]) -> anyhow::Result<ExitCode> {
    let run: SuggestRun = run_of(partials)?;
    let output = match args.output {
        MergeOutput::Table => SuggestOutput::Table,
        MergeOutput::Json => SuggestOutput::Json,
        MergeOutput::Yaml => SuggestOutput::Yaml,
        MergeOutput::Html => SuggestOutput::Html,
        MergeOutput::Markdown => SuggestOutput::Markdown,
        MergeOutput::Policy => SuggestOutput::Policy,
        MergeOutput::Jsonl => {
            return Err(not_an_output(
                args.output,
                "suggest",
                "table, json, yaml, html, markdown or policy",
            ))
        }
    };
    // A shard of suggest lists nothing to stream: its seal is checked here, before its totals
    // are read.
    check_all(partials)?;
    partials.sort_by_key(|p| p.header.shard.index);
    let mut fold = SuggestFold::default();
    let mut sums = add_totals(partials, |_| Ok(()), |t: ShardLearning, _| fold.add(t))?;
    // What pass 1 could not read, pass 2 says: a shard's entries are only what a later one
    // learned past its first 10,000 signatures, added once the first 10,000 are known.
    for place in 0..partials.len() {
        add_past(partials, place, &mut sums, &mut fold)?;
    }
    let first = &partials[0];
    let shards = Shards {
        count: first.header.shard.count,
        fingerprint: &first.header.fingerprint,
        source: first.end.source.as_deref(),
    };
    let name = first.name.clone();
    conclude_merged(ctx, &run, fold, output, shards).map_err(|e| match e.downcast::<Unmergeable>() {
        Ok(why) => problem(format!("`{name}` {why}")),
        Err(e) => e,
    })
}

/// A suggest shard's entries (docs/past-one-machine.md): its counts of the signatures past
/// its first 10,000, each checked as numbers with the totals' sums (`sums`, every partial's
/// so far), then added where one process counts it. Any other entry is refused: a shard of
/// suggest says nothing of what it could not read.
fn add_past(partials: &[Partial], place: usize, sums: &mut Sums, fold: &mut SuggestFold) -> anyhow::Result<()> {
    let p = &partials[place];
    let mut entries = p.entries().map_err(|e| read_error(&p.name, e))?;
    while let Some(raw) = entries.next_raw() {
        let raw = raw.map_err(problem)?;
        let counts: Counts = decode_learned(&p.name, raw.number, &raw.json).map_err(problem)?;
        counts
            .check()
            .map_err(|why| problem(format!("`{}` {why} (entry {})", p.name, raw.number)))?;
        sums.add(&counts, place)
            .map_err(|o| match o.partial.filter(|&at| at != place) {
                // The partial that holds the impossible number, not this entry's.
                Some(at) => problem(format!("`{}` {}", partials[at].name, o.why)),
                None => problem(format!("`{}` {} (entry {})", p.name, o.why, raw.number)),
            })?;
        let past = decode_learned(&p.name, raw.number, &raw.json).map_err(problem)?;
        fold.add_past(past)
            .map_err(|why| damaged(p, &format!("entry {}: {why}", raw.number)))?;
    }
    Ok(())
}
