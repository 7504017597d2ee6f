//! The search over the source `commands::replay::source` opened ([`Tune::drive`]): one sweep
//! of every candidate against the baseline, then the ranking and the output, the pick, or
//! with `-o partial` the shard's tallies for `merge`.
//!
//! Owns: [`Tune`], what the search is given once the candidates are built. Must not: build
//! the candidates (that is `arms`), replay or count (`tune::sweep`), rank or format.

use crate::app::Context;
use crate::cli::TuneOutput;
use crate::commands::replay::checks::backtest_refusal;
use crate::commands::replay::source::About;
use crate::error::{CliError, ExitCode};
use crate::output::progress::progress_bar;
use crate::output::records::render_change;
use crate::output::stderr::{invalid_text, Stderr};
use crate::output::tune::StderrListener;
use crate::output::Format;
use crate::replay::partial::{fingerprint, Header, Recorder};
use crate::replay::policy_sets::PolicySets;
use crate::replay::run::Options;
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Tap;
use crate::replay::source::HistorySource;
use crate::tune::rank::MaxCompute;
use crate::tune::sweep::{shares_matching, sweep, sweep_partial};
use crate::tune::Vary;

use super::finish::finish;
use super::pick::Picking;
use super::record::TuneRun;

/// The sweep, the ranking and the output, over the source `commands::replay::source` opened.
pub struct Tune<'a> {
    /// `None`: `--pick`.
    pub format: Option<TuneOutput>,
    pub picking: Picking<'a>,
    pub run: TuneRun,
    pub max_compute: Option<MaxCompute>,
    pub options: Options,
    pub varies: &'a [Vary],
}

impl Tune<'_> {
    /// The sweep of `sets` (the baseline, its categorizer attached, and the candidates) over `source`, then the
    /// ranking and the output, the pick, or the partial.
    pub fn drive<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        sets: Option<PolicySets>,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let Some(sets) = sets else {
            return Err(CliError::usage("no baseline to compare the candidates with").into());
        };
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
        let (Some(format), None) = (self.format, self.picking.pick) else {
            return self.picking.after_search(ctx, swept, &self.run, self.max_compute);
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
