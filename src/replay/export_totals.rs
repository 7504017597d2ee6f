//! What a Lookout export read, exported and left out, and what Lookout could not tell, as
//! counts ([`ExportTotals`], [`Notes`]): the numbers a replay of a database carries beside
//! its answer (a shard's partial holds them, `merge` adds them up, `history` says them).
//!
//! Owns: those counts and how two shards' add up. Must not: count them (`lookout` does, as it
//! maps rows), or word them for people (`output::history` does). It sits in `replay`, not
//! `lookout`, so that a partial can hold them without `replay` reading `lookout`.

/// What Lookout could not tell, and the decisions the mapping took (`lookout::mapping`), as
/// counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Notes {
    /// Runs written.
    pub runs: u64,
    /// Failed runs (FAILED, PREEMPTED) without `failure_category`.
    pub no_category: u64,
    /// Containers written from the one exit code Lookout keeps (first non-zero container).
    pub first_exit_code_only: u64,
    /// FAILED runs without `exit_code` (no container written).
    pub no_exit_code: u64,
    /// Error texts not attached because the run had no exit code.
    pub error_text_dropped: u64,
    /// Error texts cut at the length the mapping keeps (`lookout::mapping::ERROR_TEXT_MAX`).
    pub error_text_truncated: u64,
    /// 1 when the job has a run in flight (the history ends before it).
    pub in_flight_jobs: u64,
    /// Runs left out because they are in flight, or come after one.
    pub in_flight_runs: u64,
    pub terminated: u64,
    pub unable_to_schedule: u64,
    pub max_runs_exceeded: u64,
    /// Runs left out after a MAX_RUNS_EXCEEDED run.
    pub after_max_runs: u64,
    pub unknown_state: u64,
    /// Runs that finished before they started: `runFor` clamped to 0s.
    pub out_of_order_times: u64,
    /// Durations set to 0s because a time was missing.
    pub missing_times: u64,
    /// Debug texts that are not the executor's debug document (no `events`).
    #[serde(default)]
    pub debug_not_document: u64,
    /// Error texts of runs with a recorded category kept whole: without the deployed
    /// categorizer, the hint the executor appended cannot be told from the text.
    #[serde(default)]
    pub hint_kept: u64,
    /// Returned leases whose error text is neither a stuck pod's nor surely a failed-pod
    /// check's (a failed submission's reads alike): kept as `podError`, no `executorPath`.
    #[serde(default)]
    pub lease_return_unplaced: u64,
    /// Runs written with their start (`startedAt`): Lookout starts them before the run before
    /// them finished (or before the job's submission), which no `queuedFor` can say.
    #[serde(default)]
    pub started_early: u64,
}

impl Notes {
    /// Every count, in one order (so that adding and taking back name each once). Taken
    /// apart whole (a pattern without `..`): a count added to [`Notes`] and not here does not
    /// compile. The fields are listed once, for the pattern and the array alike.
    fn counts(&mut self) -> [&mut u64; 19] {
        macro_rules! each {
            ($($count:ident),* $(,)?) => {{
                let Notes { $($count),* } = self;
                [$($count),*]
            }};
        }
        each!(
            runs,
            no_category,
            first_exit_code_only,
            no_exit_code,
            error_text_dropped,
            error_text_truncated,
            in_flight_jobs,
            in_flight_runs,
            terminated,
            unable_to_schedule,
            max_runs_exceeded,
            after_max_runs,
            unknown_state,
            out_of_order_times,
            missing_times,
            debug_not_document,
            hint_kept,
            lease_return_unplaced,
            started_early,
        )
    }

    pub fn add(&mut self, o: &Notes) {
        let mut o = *o;
        for (a, b) in self.counts().into_iter().zip(o.counts()) {
            *a += *b;
        }
    }

    /// `o`, added before, taken back (a job its writer left out after all).
    pub fn take_back(&mut self, o: &Notes) {
        let mut o = *o;
        for (a, b) in self.counts().into_iter().zip(o.counts()) {
            *a = a.saturating_sub(*b);
        }
    }
}

/// What was read, exported and left out so far, and what Lookout could not tell. Counts of
/// jobs and runs: the shards' of one history add up to the whole's (docs/past-one-machine.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExportTotals {
    /// Jobs and runs the source read (for progress), left-out ones included.
    pub jobs_read: u64,
    pub runs_read: u64,
    /// Jobs exported (their runs are `notes.runs`).
    pub jobs: u64,
    /// Jobs with no run left to replay (all in flight or left out by the mapping).
    pub empty_jobs: u64,
    /// Rows that could not be read or mapped: reported, left out.
    pub jobs_left_out: u64,
    pub runs_left_out: u64,
    pub notes: Notes,
}

impl ExportTotals {
    /// Rows reported and left out: `--strict` makes any of them exit 1.
    pub fn left_out(&self) -> u64 {
        self.jobs_left_out + self.runs_left_out
    }

    /// Adds another shard's.
    pub fn add(&mut self, o: &ExportTotals) {
        self.jobs_read += o.jobs_read;
        self.runs_read += o.runs_read;
        self.jobs += o.jobs;
        self.empty_jobs += o.empty_jobs;
        self.jobs_left_out += o.jobs_left_out;
        self.runs_left_out += o.runs_left_out;
        self.notes.add(&o.notes);
    }
}
