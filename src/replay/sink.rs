//! The boundary between the replay and its output, as ripgrep draws it between its
//! searcher and its printer: the replay drives a [`Sink`] with what happened, in input
//! order; a sink (one per output format, in `output`) turns that into bytes.
//!
//! The contract:
//! - **The replay counts, the sink renders.** Every number a sink prints comes from what it
//!   is handed: a job's [`JobReport`], a changed job's [`Change`] (with its estimate, final),
//!   and at the end the [`Summary`] or [`Comparison`] the replay folded and the
//!   [`Estimates`]. A sink never adds jobs up itself (it may count what it wrote, for its
//!   own layout: a comma, an "(none)", the "… and N more" of a list it cuts short).
//! - **Order.** [`Sink::begin`]; then, per entry in input order, the messages about it and its
//!   [`Sink::job`] (plain replay) or [`Sink::change`] (`--baseline`, changed jobs only); then
//!   [`Sink::end`] once. [`Sink::progress`] comes between units of work. Changed jobs
//!   keep input order, but from the first one that is Pending on a side they come after the
//!   last job has been replayed (their estimates need the whole history; see
//!   `estimate`'s module docs), still before `end`.
//! - **A closed stdout** (`| head`): an error of kind `BrokenPipe` from `job` or `change`
//!   (or the messages written with them) stops the replay quietly; from `end` it is
//!   ignored. Any other error aborts the replay.
//! - **[`Sink::needs`]** is read once, before the replay, which then computes nothing more
//!   than what it asks for (no per-run texts when no report is printed, records rendered
//!   where the job was replayed, in parallel).
//!
//! Every source (files, Lookout's database) feeds the same path: it is a
//! [`HistorySource`](super::source::HistorySource); sinks do not know where histories came
//! from (only whether a what-if's baseline is the cluster's, which a plan's header says). Must not: do I/O itself (a sink owns its writers), or format anything.

use std::io;

use crate::engine::JobReport;
use crate::input::SourceFile;

use super::backtest::Backtest;
use super::compare::{ByClass, Comparison, JobDiff, Steps};
use super::estimate::{Estimate, FailureClass, PendingSet, Rates, Sums};
use super::incidents::SeenIncidents;
use super::source::Progress;
use super::summary::Summary;

/// Renders one job's record into a buffer. A plain function, so that every worker can call
/// it in parallel while the sink itself is borrowed by the thread that writes.
pub type RenderJob = fn(&JobReport, &mut Vec<u8>);

/// Renders a changed job without an estimate as `-o json` prints it (a partial result
/// keeps that record, so that a merge printing JSON copies it).
pub type RenderChange = fn(&Change<'_>, &mut Vec<u8>);

/// What a sink reads; the replay produces nothing more.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    /// A plain replay hands each job's report, per-run texts and all, to [`Sink::job`].
    /// `false`: only the summary is printed, so jobs are counted where they are replayed
    /// and their reports dropped there (kept only for their messages).
    pub reports: bool,
    /// With `reports`: the job's record, rendered in the worker that replayed it; `job`
    /// then gets these bytes and a report without its per-run texts (freed in parallel).
    pub render: Option<RenderJob>,
    /// The breakdowns of a report: jobs by failure class ([`Estimates::by_class`]), and in
    /// a comparison each side's [`Summary`] ([`SideSummaries`]).
    pub breakdowns: bool,
    /// A comparison hands each changed job's runs under both sides ([`Change::steps`]).
    pub steps: bool,
    /// The sink prints a changed job without an estimate as the bytes of its JSON record
    /// ([`RenderChange`]): `merge` may hand it a partial's record to [`Sink::change_json`].
    pub change_json: bool,
}

/// One job that `--baseline` changes.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    pub diff: &'a JobDiff,
    /// Its failure class (its last recorded failed run's); `None`: no run failed.
    pub class: Option<&'a FailureClass>,
    /// The estimate of each side that is Pending (docs/estimates.md, final: computed over the whole
    /// history); `None` for a side that is not, or when there are no trials at all.
    pub baseline_estimate: Option<&'a Estimate>,
    pub candidate_estimate: Option<&'a Estimate>,
    /// With [`Needs::steps`].
    pub steps: Option<&'a Steps>,
}

impl Change<'_> {
    /// The estimate a one-line view shows: the candidate's, else the baseline's.
    pub fn estimate(&self) -> Option<&Estimate> {
        self.candidate_estimate.or(self.baseline_estimate)
    }
}

/// What docs/estimates.md estimate over the whole replay.
#[derive(Debug, Clone)]
pub struct Estimates {
    pub rates: Rates,
    /// Changed jobs (a comparison) and Pending jobs (both) by failure class (with
    /// [`Needs::breakdowns`]; empty without).
    pub by_class: ByClass,
    /// The jobs asked about: Failed in the baseline and Pending in the candidate (a
    /// comparison's `expectedRescued`), or every Pending job (a plain replay).
    pub asked: Sums,
    /// Every Pending job (the candidate's, in a comparison): the expected compute.
    pub pending: Sums,
    /// With `--backtest-at` (docs/estimates.md).
    pub backtest: Option<Backtest>,
    /// With incidents looked for (docs/reference/suggest.md "Incidents"): the windows and
    /// what they left out of the rates.
    pub incidents: Option<SeenIncidents>,
}

impl Estimates {
    /// The sums of the jobs of `asked` and `pending`, from the final rates.
    pub fn new(
        rates: Rates,
        by_class: ByClass,
        asked: &PendingSet,
        pending: &PendingSet,
        backtest: Option<Backtest>,
    ) -> Estimates {
        Estimates {
            asked: rates.sums(asked),
            pending: rates.sums(pending),
            rates,
            by_class,
            backtest,
            incidents: None,
        }
    }
}

/// Each side's summary, in a comparison (with [`Needs::breakdowns`]).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SideSummaries {
    pub baseline: Summary,
    pub candidate: Summary,
}

/// Something to tell the user about one entry, on stderr.
#[derive(Debug)]
pub enum Message<'a> {
    /// An entry that was not replayed (a bad line, a missing policy): where and why.
    /// Counted in the totals' `errors`.
    Error(&'a str),
    /// A YAML history file whose documents are invalid, with every diagnostic. Counted in
    /// the totals' `errors`.
    Invalid(&'a SourceFile),
    /// The same, as a partial result holds it (docs/past-one-machine.md): its diagnostics rendered when the
    /// shard read the file, written as they are.
    Rendered(&'a str),
    /// The first job of a queue that is not among the documents: it got `given` (the
    /// `--retry-policy` list, else every policy given).
    MissingQueue {
        job: &'a str,
        queue: &'a str,
        given: &'a [String],
    },
    /// A record the source left out before the replay (a Lookout row that cannot be read,
    /// docs/lookout.md), in the source's words. Not counted in `errors`.
    LeftOut(&'a str),
    /// The history contradicts the decisions.
    Contradiction { job: &'a str, text: &'a str },
    /// An `expect` of the history was not met.
    ExpectationFailed { job: &'a str, text: &'a str },
}

/// The totals, handed to [`Sink::end`].
#[derive(Debug, Clone, Copy)]
pub enum Totals<'a> {
    Replay {
        summary: &'a Summary,
        estimates: &'a Estimates,
    },
    Compare {
        comparison: &'a Comparison,
        estimates: &'a Estimates,
        /// With [`Needs::breakdowns`].
        sides: Option<&'a SideSummaries>,
    },
}

/// Where a replay's results go. See the module docs for the contract.
pub trait Sink {
    /// Read once, before the replay.
    fn needs(&self) -> Needs {
        Needs::default()
    }

    /// Before anything else (what a streamed format opens with).
    fn begin(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// How far the source is (between units of work).
    fn progress(&mut self, _at: Progress) {}

    /// One replayed job of a plain replay (only when [`Needs::reports`]); `rendered` is
    /// [`Needs::render`]'s bytes for it (empty without one).
    fn job(&mut self, _report: &JobReport, _rendered: &[u8]) -> io::Result<()> {
        Ok(())
    }

    /// One job that `--baseline` changes.
    fn change(&mut self, _change: &Change<'_>) -> io::Result<()> {
        Ok(())
    }

    /// One job that `--baseline` changes, with no side Pending, as its JSON record
    /// ([`RenderChange`]'s bytes, from a partial): only when [`Needs::change_json`].
    fn change_json(&mut self, _record: &[u8]) -> io::Result<()> {
        Err(io::Error::other(
            "this output does not print changed jobs as JSON records",
        ))
    }

    fn message(&mut self, message: &Message<'_>) -> io::Result<()>;

    fn end(&mut self, totals: Totals<'_>) -> io::Result<()>;
}
