//! Lookout as the replay verbs and `history` name it: `$LOOKOUT_DB` and `--lookout-db`
//! resolved to a DSN, the filter flags turned into a [`Filter`], and the words of an empty
//! input (with, for a Lookout window, where the queue's jobs are).
//!
//! Owns: those resolutions and messages. Must not: read a history or write output (the
//! database is asked only for the empty window's hint).

use crate::cli::WindowArgs;
use crate::error::CliError;
use crate::lookout::{db, Filter};
use crate::model::duration::GoDuration;
use crate::model::failure_history::{TimeError, Timestamp};

/// An empty input (docs/cli.md, exit codes): `no job in SOURCE (FILTERS): NOTHING`, exit 3.
/// `source` as the user named it (`` `PATH` ``, `stdin`, ``Lookout `DSN` ``); `filter`: the
/// filters that select its jobs (a Lookout source), named when given.
pub fn no_job(source: &str, filter: Option<&Filter>, nothing: &str) -> CliError {
    let filters = filter.map(described_filters).unwrap_or_default();
    let within = if filters.is_empty() {
        String::new()
    } else {
        format!(" ({})", filters.join(", "))
    };
    CliError::invalid(format!("no job in {source}{within}: {nothing}"))
}

/// The filters of a Lookout source, as [`no_job`] names them: the queue, the job set, the
/// jobs, the window (`FROM–TO`, `from FROM`, `before TO`).
fn described_filters(f: &Filter) -> Vec<String> {
    let mut out = vec![match &f.queue {
        Some(q) => format!("queue `{q}`"),
        None => "every queue".to_string(),
    }];
    if let Some(js) = &f.jobset {
        out.push(format!("job set `{js}`"));
    }
    if !f.jobs.is_empty() {
        let ids: Vec<String> = f.jobs.iter().map(|j| format!("`{j}`")).collect();
        out.push(format!(
            "{} {}",
            if ids.len() == 1 { "job" } else { "jobs" },
            ids.join(", ")
        ));
    }
    match (f.from, f.to) {
        (Some(from), Some(to)) => out.push(format!("{from}–{to}")),
        (Some(from), None) => out.push(format!("from {from}")),
        (None, Some(to)) => out.push(format!("before {to}")),
        (None, None) => {}
    }
    out
}

/// An empty Lookout window ([`no_job`], `named` as the user knows the source), with the
/// [`nearest_hint`] when the database (`dsn`) can tell it.
pub fn no_job_in_lookout(
    named: &str,
    dsn: Option<&str>,
    timeout: std::time::Duration,
    filter: &Filter,
    nothing: &str,
) -> CliError {
    let e = no_job(named, Some(filter), nothing);
    match dsn.and_then(|dsn| nearest_hint(dsn, timeout, filter)) {
        Some(hint) => e.with_hint(hint),
        None => e,
    }
}

/// A history file as an empty-input error names it: `stdin` for `-`, else `` `PATH` ``.
pub fn history_named(path: &std::path::Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        format!("`{}`", path.display())
    }
}

/// The hint of an empty Lookout database export: the days of the queue's jobs nearest the
/// window (the last before it, the first after it), or that the queue has none at all.
/// `None` when neither tells anything, or the database cannot say (the error is the export's).
pub fn nearest_hint(dsn: &str, timeout: std::time::Duration, filter: &Filter) -> Option<String> {
    let n = db::nearest(dsn, timeout, filter).ok()?;
    let queue = match &filter.queue {
        Some(q) => format!("queue `{q}`"),
        None => "Lookout".to_string(),
    };
    if !n.any {
        return Some(match &filter.queue {
            Some(_) => format!("{queue} has no job in Lookout; check the name"),
            None => "Lookout has no job at all".to_string(),
        });
    }
    let days = match (n.before, n.after) {
        (Some(b), Some(a)) => format!("{b} (before the window) and {a} (after it)"),
        (Some(b), None) => format!("{b} (before the window)"),
        (None, Some(a)) => format!("{a} (after the window)"),
        (None, None) => return None,
    };
    Some(format!("{queue} has jobs submitted on {days}"))
}

/// The hint of a command given no history, when `$LOOKOUT_DB` would have given one.
pub const SET_LOOKOUT_DB: &str = "or set `LOOKOUT_DB` to Lookout's database, which a command given neither reads";

/// The DSN `$LOOKOUT_DB` stands for (docs/lookout.md): that of `--lookout-db` given without
/// a value, and, when `implicit` (a verb that reads Lookout when no other source is given, and
/// none was), of a command line without the flag. The variable alone never switches a source
/// otherwise (`get` asks the server).
pub fn resolve_dsn(given: Option<Option<String>>, implicit: bool) -> Result<Option<String>, CliError> {
    let env = || std::env::var(crate::deploy::DSN_VAR).ok().filter(|v| !v.is_empty());
    match given {
        Some(Some(dsn)) => Ok(Some(dsn)),
        Some(None) => env().map(Some).ok_or_else(|| {
            CliError::usage("`--lookout-db` without a value reads `$LOOKOUT_DB`, which is not set")
                .with_hint("give the database: `--lookout-db postgresql://user:password@host:5432/lookout`")
        }),
        None if implicit => Ok(env()),
        None => Ok(None),
    }
}

/// `simulate`, `tune` and `suggest`: `--lookout-db` as the DSN it stands for, `$LOOKOUT_DB`
/// when no `--history` is given either ([`resolve_dsn`]): `Some(Some(DSN))` or `None` after.
pub fn resolve_replay_dsn(args: &mut crate::cli::ReplayArgs) -> Result<(), CliError> {
    let implicit = args.history.is_none();
    args.lookout_db = resolve_dsn(args.lookout_db.take(), implicit)?.map(Some);
    Ok(())
}

pub fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The filter flags `history` and `simulate --lookout-db` share.
pub struct FilterFlags<'a> {
    /// `None`: every queue (`history` without `--queue`).
    pub queue: Option<&'a str>,
    pub jobset: Option<&'a str>,
    pub jobs: &'a [String],
    pub window: &'a WindowArgs,
}

/// A time flag's value (`--from`, `--to`, `--backtest-at`), read as a history's times are
/// (`Timestamp::read`): a time that does not exist is refused with the reader's own reason.
pub fn time_flag(flag: &str, text: &str) -> Result<Timestamp, CliError> {
    Timestamp::read(text).map_err(|e| match e {
        TimeError::Range(reason) => CliError::usage(format!("invalid `{flag}` `{text}`: {reason}")),
        TimeError::Beyond { later } => CliError::usage(format!("`{flag}` `{text}` {}", Timestamp::beyond(later))),
        TimeError::Shape => CliError::usage(format!(
            "invalid `{flag}` `{text}`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`"
        )),
    })
}

/// The jobs the flags select; `--since` counts back from `now`.
pub fn lookout_filter(args: &FilterFlags<'_>, now: Timestamp) -> Result<Filter, CliError> {
    let time = |flag: &str, v: Option<&str>| v.map(|s| time_flag(flag, s)).transpose();
    let w = args.window;
    let mut from = time("--from", w.from.as_deref())?;
    let to = time("--to", w.to.as_deref())?;
    if let Some(s) = &w.since {
        let d = duration_flag("--since", s)?;
        from = Some(Timestamp(now.0.saturating_sub(i64::try_from(d.0).unwrap_or(i64::MAX))));
    }
    if let (Some(f), Some(t)) = (from, to) {
        if t <= f {
            return Err(CliError::usage(format!("`--to` `{t}` is not after `--from` `{f}`")));
        }
    }
    Ok(Filter {
        queue: args.queue.map(str::to_string),
        jobset: args.jobset.map(str::to_string),
        jobs: args.jobs.to_vec(),
        from,
        to,
        shard: None,
    })
}

/// A duration flag's value (`watch --window`, `--since`): a Go duration with an optional
/// leading day count, as `--since` reads it (`7d`, `36h`, `1d12h`); refused in its words.
pub fn duration_flag(flag: &str, text: &str) -> Result<GoDuration, CliError> {
    since(text).map_err(|why| CliError::usage(format!("invalid `{flag}` `{text}`: {why}")))
}

/// A Go duration with an optional leading day count (`7d`, `1d12h`): `--since` is about days.
/// `Err`: why not, in words.
fn since(text: &str) -> Result<GoDuration, &'static str> {
    const SHAPE: &str = "expected a duration such as `7d`, `36h` or `1d12h`";
    // Past 64 bits of nanoseconds (some 213,000 days).
    const TOO_LARGE: &str = "too large";
    let (days, rest) = match text.find('d') {
        Some(i) => match text[..i].parse::<u64>() {
            Ok(days) => (days, &text[i + 1..]),
            Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => return Err(TOO_LARGE),
            Err(_) => return Err(SHAPE),
        },
        None => (0, text),
    };
    let rest = match rest {
        "" => GoDuration(0),
        rest => match GoDuration::parse(rest) {
            Ok(d) => d,
            Err(crate::model::duration::DurationError::TooLarge) => return Err(TOO_LARGE),
            Err(_) => return Err(SHAPE),
        },
    };
    let total = days
        .checked_mul(86_400_000_000_000)
        .and_then(|d| d.checked_add(rest.0))
        .ok_or(TOO_LARGE)?;
    match total {
        0 => Err(SHAPE),
        total => Ok(GoDuration(total)),
    }
}

#[cfg(test)]
mod tests {
    use super::since;
    use crate::model::duration::GoDuration;

    #[test]
    fn since_takes_days() {
        assert_eq!(since("7d"), Ok(GoDuration::from_secs(7 * 86_400)));
        assert_eq!(since("1d12h"), Ok(GoDuration::from_secs(36 * 3600)));
        assert_eq!(since("36h"), Ok(GoDuration::from_secs(36 * 3600)));
        let shape = Err("expected a duration such as `7d`, `36h` or `1d12h`");
        assert_eq!(since("0s"), shape);
        assert_eq!(since("xd"), shape);
        assert_eq!(since("week"), shape);
        // A duration, but past 64 bits of nanoseconds: said as too large.
        for large in ["999999999d", "99999999999999999999999d", "213504d", "1d5124095h"] {
            assert_eq!(since(large), Err("too large"), "{large}");
        }
        assert_eq!(since("213503d"), Ok(GoDuration(213_503 * 86_400_000_000_000)));
    }
}
