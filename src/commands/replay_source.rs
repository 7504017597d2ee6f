//! Where a replay's histories come from, for `simulate` and `tune` alike: a file, a directory
//! or stdin (`--history`), or Lookout's database (`--lookout-db DSN --queue Q` with its
//! filters, SPEC §5.4), and with `--baseline-from-cluster` the baseline read from the same
//! database. The command hands over what it does with the source ([`Drive`]); this module
//! opens it, runs that, and afterwards says what the database export left out.
//!
//! Owns: the checks between these flags, the Lookout connection and filter, and the
//! `history` summary on stderr after a database replay (a connection lost midway: what was
//! replayed is printed, then the error, exit 4; `--strict` with rows left out: exit 1).
//! Must not: replay, count or render (that is the [`Drive`]'s).

use crate::app::Context;
use crate::cli::ReplayArgs;
use crate::commands::history::{lookout_filter, now, FilterFlags};
use crate::commands::policy_set::{base_config, load_from_cluster, PolicyFlags};
use crate::connection::parse_timeout;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::{CliError, ExitCode};
use crate::lookout::export_source::ExportSource;
use crate::lookout::{cluster, db, Export};
use crate::output::history::write_summary;
use crate::output::simulate::Baseline;
use crate::replay::source::{Files, HistorySource, Overrides};

/// What a command does with its history source.
pub trait Drive {
    /// Replays `source`; `baseline` is the what-if's baseline (`--baseline` files or the
    /// cluster's), `from` says which.
    fn drive<S: HistorySource>(
        &mut self,
        ctx: &mut Context,
        source: S,
        baseline: Option<&Simulator>,
        from: Baseline,
    ) -> anyhow::Result<ExitCode>;
}

/// `--global-max-retries` / `--default-policy`.
pub fn overrides(args: &ReplayArgs) -> Overrides {
    Overrides {
        global_max_retries: args.global_max_retries,
        default_policy: args.default_policy.clone(),
    }
}

/// Opens the source `args` name and hands it to `driver`, with `file_baseline` (from
/// `--baseline` files) or the cluster's baseline; `strict`: rows the export left out make
/// the exit status 1.
pub fn run<D: Drive>(
    ctx: &mut Context,
    args: &ReplayArgs,
    flags: PolicyFlags<'_>,
    file_baseline: Option<Simulator>,
    baseline_engine: EngineKind,
    strict: bool,
    driver: &mut D,
) -> anyhow::Result<ExitCode> {
    let overrides = overrides(args);
    let base = base_config(args)?;
    let (Some(dsn), Some(queue)) = (&args.lookout_db, &args.queue) else {
        // clap's `histories` group makes one of the two required; `check_lookout_flags` that
        // `--lookout-db` comes with `--queue`.
        let Some(history) = &args.history else {
            return Err(CliError::usage("give `--history PATH` or `--lookout-db DSN --queue Q`").into());
        };
        let source = Files::open(history, base, overrides).map_err(CliError::invalid)?;
        return driver.drive(ctx, source, file_baseline.as_ref(), Baseline::Files);
    };
    let settings = overrides.apply(&base);
    let filter = lookout_filter(
        &FilterFlags {
            queue,
            jobset: args.jobset.as_deref(),
            jobs: &[],
            window: &args.window,
        },
        now(),
    )?;
    let mut tables = db::HISTORY_TABLES.to_vec();
    if args.baseline_from_cluster {
        tables.extend_from_slice(cluster::CLUSTER_TABLES);
    }
    let db = db::connect_with(dsn, parse_timeout(&ctx.global.timeout)?, &tables)?;
    let (baseline, from) = if args.baseline_from_cluster {
        let state = cluster::read(&db)?;
        match load_from_cluster(ctx, state, flags, queue, baseline_engine)? {
            Some(b) => (Some(b), Baseline::Cluster),
            None => return Ok(ExitCode::InvalidInput),
        }
    } else {
        (file_baseline, Baseline::Files)
    };
    if ctx.global.verbose > 0 {
        writeln!(ctx.err, "lookout-db: {}", db::statement(&filter)?)?;
    }
    let source = ExportSource::new(Export::new(db::jobs(db, &filter)?), settings, "lookout-db");
    let state = source.state();
    let code = driver.drive(ctx, source, baseline.as_ref(), from)?;
    let state = std::mem::take(&mut *state.lock().unwrap_or_else(|e| e.into_inner()));
    // `history`'s summary: what was read, left out, and what Lookout could not tell.
    write_summary(ctx.err, queue, &state.totals)?;
    if let Some(e) = state.error {
        // The connection was lost: what was printed covers the jobs read before.
        return Err(e);
    }
    Ok(if code == ExitCode::Success && strict && state.totals.left_out() > 0 {
        ExitCode::Failure
    } else {
        code
    })
}

/// `--lookout-db` needs `--queue`; the filters and `--baseline-from-cluster` need
/// `--lookout-db`; stdin is read once.
pub fn check_flags(args: &ReplayArgs, files: &[std::path::PathBuf]) -> Result<(), CliError> {
    let stdin = |p: &std::path::PathBuf| p.as_os_str() == "-";
    if args.history.as_ref().is_some_and(stdin) && files.iter().chain(&args.baseline).any(stdin) {
        return Err(CliError::usage(
            "stdin can be read once: give either `--history -` or `-f -`, not both",
        ));
    }
    if args.lookout_db.is_some() {
        return match args.queue {
            Some(_) => Ok(()),
            None => Err(CliError::usage(
                "`--lookout-db` replays the jobs of one queue: give `--queue QUEUE`",
            )),
        };
    }
    let given = [
        ("--baseline-from-cluster", args.baseline_from_cluster),
        ("--queue", args.queue.is_some()),
        ("--jobset", args.jobset.is_some()),
        ("--since", args.window.since.is_some()),
        ("--from", args.window.from.is_some()),
        ("--to", args.window.to.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(CliError::usage(format!(
            "`{flag}` reads Lookout's database: give `--lookout-db DSN` (with `--history`, the file is the whole history)"
        ))),
        None => Ok(()),
    }
}
