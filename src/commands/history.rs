//! `retryctl history` (SPEC §3.3): Lookout → FailureHistory documents for `simulate`.
//!
//! Load (filters, source) → stream jobs through `history::mapping` → `output::history`.
//! Memory stays one page of jobs whatever the number of jobs. A row that cannot be mapped is
//! reported with its job and run id on stderr and skipped; the exit status is then 1.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::app::Context;
use crate::cli::{HistoryArgs, HistoryOutput};
use crate::connection::{parse_timeout, resolve, Env};
use crate::error::{CliError, ExitCode};
use crate::history::mapping::map_job;
use crate::history::{lookout_api, lookout_db, Filter, Item, Source};
use crate::model::duration::GoDuration;
use crate::model::history::Timestamp;
use crate::output::history::{write_history, write_summary, Totals};

pub fn run(ctx: &mut Context, args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let filter = filter(args, now())?;
    let timeout = parse_timeout(&ctx.global.timeout)?;
    let source: Source = match (&args.lookout_db, &args.lookout_url) {
        (Some(dsn), _) => lookout_db::jobs(lookout_db::connect(dsn, timeout)?, &filter, dsn),
        (None, Some(url)) => {
            let settings = resolve(&ctx.global, &Env::from_process())?;
            if let Some(warning) = settings.tls.warning() {
                writeln!(ctx.err, "{warning}")?;
            }
            let (url, credentials, tls) = settings.lookout_client(url)?;
            lookout_api::jobs(lookout_api::Api::new(&url, credentials.auth, &tls, timeout)?, &filter)
        }
        (None, None) => return Err(CliError::usage("give `--lookout-db DSN` or `--lookout-url URL`").into()),
    };
    let mut file;
    let out: &mut dyn Write = match &args.output_file {
        Some(path) => {
            file = BufWriter::new(File::create(path).map_err(|e| {
                CliError::failed(format!(
                    "cannot write `{}`: {}",
                    path.display(),
                    crate::input::io_reason(&e)
                ))
            })?);
            &mut file
        }
        None => &mut *ctx.out,
    };
    let yaml = args.output == HistoryOutput::Yaml;
    let mut totals = Totals::default();
    for item in source {
        let job = match item? {
            Item::Job(j) => j,
            Item::Bad(e) => {
                writeln!(ctx.err, "error: {e}; job skipped")?;
                totals.bad_jobs += 1;
                continue;
            }
        };
        match map_job(&job) {
            Ok(m) => {
                totals.notes.add(&m.notes);
                match m.history {
                    Some(h) => {
                        write_history(out, &h, yaml)?;
                        totals.jobs += 1;
                    }
                    None => totals.empty_jobs += 1,
                }
            }
            Err(e) => {
                writeln!(ctx.err, "error: {e}; job skipped")?;
                totals.bad_jobs += 1;
            }
        }
    }
    out.flush()?;
    write_summary(ctx.err, &args.queue, &totals)?;
    Ok(if totals.bad_jobs > 0 {
        ExitCode::Failure
    } else {
        ExitCode::Success
    })
}

fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn filter(args: &HistoryArgs, now: Timestamp) -> Result<Filter, CliError> {
    let time = |flag: &str, v: &Option<String>| -> Result<Option<Timestamp>, CliError> {
        v.as_deref()
            .map(|s| {
                Timestamp::parse(s).ok_or_else(|| {
                    CliError::usage(format!(
                        "invalid `{flag}` `{s}`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`"
                    ))
                })
            })
            .transpose()
    };
    let mut from = time("--from", &args.from)?;
    let to = time("--to", &args.to)?;
    if let Some(s) = &args.since {
        let d = since(s).ok_or_else(|| {
            CliError::usage(format!(
                "invalid `--since` `{s}`: expected a duration such as `7d`, `36h` or `1d12h`"
            ))
        })?;
        from = Some(Timestamp(now.0.saturating_sub(i64::try_from(d.0).unwrap_or(i64::MAX))));
    }
    if let (Some(f), Some(t)) = (from, to) {
        if t <= f {
            return Err(CliError::usage(format!("`--to` `{t}` is not after `--from` `{f}`")));
        }
    }
    Ok(Filter {
        queue: args.queue.clone(),
        jobset: args.jobset.clone(),
        jobs: args.jobs.clone(),
        from,
        to,
    })
}

/// A Go duration with an optional leading day count (`7d`, `1d12h`): `--since` is about days.
fn since(text: &str) -> Option<GoDuration> {
    let (days, rest) = match text.find('d') {
        Some(i) => (text[..i].parse::<u64>().ok()?, &text[i + 1..]),
        None => (0, text),
    };
    let rest = if rest.is_empty() {
        GoDuration(0)
    } else {
        GoDuration::parse(rest).ok()?
    };
    let total = days.checked_mul(86_400_000_000_000)?.checked_add(rest.0)?;
    (total > 0).then_some(GoDuration(total))
}

#[cfg(test)]
mod tests {
    use super::since;
    use crate::model::duration::GoDuration;

    #[test]
    fn since_takes_days() {
        assert_eq!(since("7d"), Some(GoDuration::from_secs(7 * 86_400)));
        assert_eq!(since("1d12h"), Some(GoDuration::from_secs(36 * 3600)));
        assert_eq!(since("36h"), Some(GoDuration::from_secs(36 * 3600)));
        assert_eq!(since("0s"), None);
        assert_eq!(since("xd"), None);
        assert_eq!(since("week"), None);
    }
}
