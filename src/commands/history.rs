//! `retryctl history` (docs/lookout.md): Lookout → FailureHistory documents for `simulate`.
//!
//! Load (filters, source) → [`Export`] (the source mapped one job at a time) →
//! `output::history`, with a progress line on a terminal. Memory stays one job (one page for
//! the REST API) whatever the number of jobs. A row that cannot be read is reported with its
//! job, run and column on stderr and left out; the export goes on, and `--strict` makes the
//! exit status 1 afterwards. No job read is an empty input
//! (`commands::replay::lookout::no_job`, exit 3, before the summary) unless `--allow-empty`. `--categorizer FILE` (the deployed config, read and
//! checked before the export: exit 3 when it does not validate) gives the hints the export
//! takes off the executor's texts.

use crate::app::Context;
use crate::cli::{HistoryArgs, HistoryOutput};
use crate::commands::replay::lookout::{
    lookout_filter, no_job_in_lookout, now, resolve_dsn, FilterFlags, SET_LOOKOUT_DB,
};
use crate::connection::{parse_timeout, resolve, Env};
use crate::error::{CliError, ExitCode};
use crate::lookout::executor_text::Hints;
use crate::lookout::{api, db, Event, Export, JobStream};
use crate::lookout::{Place, RowError};
use crate::output::history::{
    history_line, left_out_line, too_long, write_history_yaml, write_summary, yaml_past_the_readers, YamlWritten,
};
use crate::output::progress::ReadProgress;
use crate::replay::source::LINE_MAX;

pub fn run(ctx: &mut Context, args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let filter = lookout_filter(
        &FilterFlags {
            queue: args.queue.as_deref(),
            jobset: args.jobset.as_deref(),
            jobs: &args.jobs,
            window: &args.window,
        },
        now(),
    )?;
    let timeout = parse_timeout(&ctx.global.timeout)?;
    let dsn = resolve_dsn(args.lookout_db.clone(), args.lookout_url.is_none())?;
    // Before Lookout is read: a categorizer that does not validate is exit 3 on its own.
    let hints = match &args.categorizer {
        Some(path) => Some(deployed_hints(ctx, path)?),
        None => None,
    };
    // What an empty export's error calls the source.
    let named: String;
    let source: JobStream = match (&dsn, &args.lookout_url) {
        (Some(dsn), _) => {
            let db = db::connect(dsn, timeout)?;
            named = format!("Lookout `{}`", db.shown());
            if ctx.global.verbose > 0 {
                writeln!(ctx.err, "lookout-db: {}", db::statement(&filter)?)?;
            }
            db::jobs(db, &filter)?
        }
        (None, Some(url)) => {
            let settings = resolve(&ctx.global, &Env::from_process())?;
            if let Some(warning) = settings.tls.warning() {
                writeln!(ctx.err, "{warning}")?;
            }
            let (url, credentials, tls) = settings.lookout_client(url)?;
            named = format!("Lookout `{url}`");
            api::jobs(api::Api::new(&url, credentials.auth, &tls, timeout)?, &filter)
        }
        (None, None) => {
            return Err(CliError::usage("give `--lookout-db DSN` or `--lookout-url URL`")
                .with_hint(SET_LOOKOUT_DB)
                .into())
        }
    };
    let out = &mut *ctx.out;
    let yaml = args.output == HistoryOutput::Yaml;
    let mut written = YamlWritten::default();
    let mut progress = ReadProgress::start("reading Lookout");
    let mut export = Export::new(source).with_hints(hints);
    while let Some(event) = export.next() {
        match event? {
            Event::History(h) if yaml => write_history_yaml(out, &h, &mut written)?,
            Event::History(h) => {
                // What `history` writes, the readers read whole: a line past their bound
                // leaves its job out, said and counted as a row that cannot be read.
                let line = history_line(&h);
                let len = line.len() - 1;
                if len as u64 > LINE_MAX {
                    let e = export.leave_out(RowError::job(&h.job.id, Place::Row, too_long(len, LINE_MAX)));
                    let said = left_out_line(ctx.style, &e);
                    progress.suspend(|| writeln!(ctx.err, "{said}"))?;
                } else {
                    out.write_all(&line)?;
                }
            }
            Event::LeftOut(e) => {
                let line = left_out_line(ctx.style, &e);
                progress.suspend(|| writeln!(ctx.err, "{line}"))?;
            }
        }
        let t = export.totals();
        progress.update(t.jobs_read, t.runs_read);
    }
    drop(progress);
    out.flush()?;
    let totals = export.totals();
    if totals.jobs_read == 0 && !args.allow_empty {
        return Err(no_job_in_lookout(&named, dsn.as_deref(), timeout, &filter, "nothing to export").into());
    }
    write_summary(ctx.err, args.queue.as_deref(), totals)?;
    if let Some(warning) = yaml_past_the_readers(written) {
        writeln!(ctx.err, "{warning}")?;
    }
    Ok(if args.strict && totals.left_out() > 0 {
        ExitCode::Failure
    } else {
        ExitCode::Success
    })
}

/// `--categorizer FILE`: the deployed categorizer's hints, read and checked as a replay's
/// categorizer is (its warnings said on stderr; exit 3 naming the file and each problem when
/// it does not validate or compile), before Lookout is read.
fn deployed_hints(ctx: &mut Context, path: &std::path::Path) -> anyhow::Result<Hints> {
    let categorizer = crate::commands::replay::sides::Categorizer::read(ctx, path)?;
    Ok(Hints::of(&categorizer.file.config))
}
