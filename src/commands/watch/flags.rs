//! `watch`'s flags checked before anything is read (docs/watch.md; `--emit kubernetes` makes
//! the same checks, in the same words): `--poll`'s floor, the durations, `--since` as a time
//! or a duration back from now, and the candidates' names.
//!
//! Owns: [`check`] and [`flags`] (→ [`Flags`]). Must not: read a file, the database or the
//! sides (`run` resolves them).

use std::time::Duration;

use crate::cli::WatchArgs;
use crate::commands::replay::lookout::{duration_flag, time_flag};
use crate::commands::replay::sides::candidate_name;
use crate::error::CliError;
use crate::model::duration::GoDuration;

use super::shared::{now_micros, Flags};

/// The checks of watch's flags before anything is read (`--emit` makes them too, in the same
/// words).
pub fn check(args: &WatchArgs) -> Result<(), CliError> {
    flags(args, now_micros()).map(|_| ())
}

/// The shortest `--poll` (docs/watch.md).
const POLL_FLOOR: Duration = Duration::from_secs(1);

pub(super) fn flags(args: &WatchArgs, now: i64) -> Result<Flags, CliError> {
    crate::server::check_listen(&args.listen)?;
    // A floor, not just more than zero: each poll is a transaction on Lookout's database, and
    // `1ns` made some 570 of them a second on an empty one.
    let poll = match GoDuration::parse(&args.poll) {
        Ok(d) if u128::from(d.as_nanos()) >= POLL_FLOOR.as_nanos() => Duration::from_nanos(d.as_nanos()),
        _ => {
            return Err(CliError::usage(format!(
                "invalid `--poll` `{}`: expected a duration of at least `1s` such as `30s` or `1m`",
                args.poll
            )))
        }
    };
    let micros = |d: GoDuration| i64::try_from(d.as_nanos() / 1000).unwrap_or(i64::MAX);
    let window = micros(duration_flag("--window", &args.window)?);
    let settle = micros(duration_flag("--settle", &args.settle)?);
    let lookback = micros(duration_flag("--lookback", &args.lookback)?);
    if lookback > window {
        // The span read again is at most the window the verdicts are judged on.
        return Err(CliError::usage(format!(
            "invalid `--lookback` `{}`: longer than `--window` `{}`; give a duration of at most the window",
            crate::diag::shown(&args.lookback),
            crate::diag::shown(&args.window)
        )));
    }
    let (since, back) = match &args.since {
        None => (None, Some(0)),
        // A duration counts back from now; anything that starts like a date is a time.
        Some(s) if s.starts_with(|c: char| c.is_ascii_digit()) && s.len() >= 10 && s.as_bytes()[4] == b'-' => {
            (Some(time_flag("--since", s)?.0 / 1000), None)
        }
        Some(s) => {
            let back = micros(duration_flag("--since", s)?);
            (Some(now.saturating_sub(back)), Some(back))
        }
    };
    if since.is_some_and(|start| start > now) {
        // Every job ending before it would be skipped without a word, after a restart too:
        // a typo (`2062` for `2026`) must not start a watch that never counts.
        let now = crate::model::failure_history::Timestamp(now / 1_000_000 * 1_000_000_000);
        return Err(CliError::usage(format!(
            "invalid `--since` `{}`: later than now (`{now}`); give a time in the past or a duration back from now such as `7d`",
            crate::diag::shown(args.since.as_deref().unwrap_or_default()),
        )));
    }
    // Each name once: the sides are resolved later, the names are checked now.
    let mut named = std::collections::HashSet::new();
    for path in &args.candidates {
        let name = candidate_name(path);
        if named.contains(&name) {
            return Err(CliError::usage(format!(
                "two candidates are named `{name}` (each `-f` is labelled by its file's base name): give them files of different names"
            )));
        }
        named.insert(name);
    }
    if args.categorizer.is_some() && args.candidates.is_empty() {
        return Err(CliError::usage(
            "`--categorizer` is the candidates' categorizer: give a candidate with `-f`, or today's with `--baseline-categorizer`",
        ));
    }
    Ok(Flags {
        poll,
        window,
        settle,
        lookback,
        since,
        back,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ExitCode;
    use clap::Parser;

    /// The flags of `retryctl watch WORDS`.
    fn args(words: &str) -> WatchArgs {
        let line = format!("retryctl watch --baseline b --state s.json {words}");
        match crate::cli::Cli::try_parse_from(line.split_whitespace())
            .unwrap()
            .command
        {
            crate::cli::Command::Watch(a) => a,
            _ => unreachable!("a watch command line"),
        }
    }

    const NOW: i64 = 1_800_000_000_000_000;

    #[test]
    fn since_is_a_time_or_a_duration_back_from_now() {
        let f = flags(&args("--since 2026-11-15T00:00:00Z"), NOW).unwrap();
        assert_eq!(f.since, Some(1_794_700_800_000_000));
        let f = flags(&args("--since 1d12h"), NOW).unwrap();
        assert_eq!(f.since, Some(NOW - 36 * 3600 * 1_000_000));
        assert_eq!(flags(&args(""), NOW).unwrap().since, None);
        assert_eq!(
            flags(&args("--since 2026-13-01T00:00:00Z"), NOW).err().unwrap().code,
            ExitCode::Usage
        );
        // Later than now, by a year or a second: refused, naming `--since` and now.
        for later in ["2099-01-01T00:00:00Z", "2027-01-15T08:00:01Z"] {
            let err = flags(&args(&format!("--since {later}")), NOW).err().unwrap();
            assert_eq!(err.code, ExitCode::Usage);
            assert_eq!(
                err.message,
                format!("invalid `--since` `{later}`: later than now (`2027-01-15T08:00:00Z`); give a time in the past or a duration back from now such as `7d`")
            );
        }
        assert!(flags(&args("--since 2027-01-15T08:00:00Z"), NOW).is_ok());
        assert_eq!(
            flags(&args("--since soon"), NOW).err().unwrap().message,
            "invalid `--since` `soon`: expected a duration such as `7d`, `36h` or `1d12h`"
        );
    }

    #[test]
    fn poll_window_and_listen_are_checked() {
        let f = flags(&args("--poll 1m30s --window 2d"), NOW).unwrap();
        assert_eq!((f.poll, f.window), (Duration::from_secs(90), 2 * 86_400 * 1_000_000));
        assert_eq!(flags(&args("--poll 1s"), NOW).unwrap().poll, Duration::from_secs(1));
        for below in ["0s", "1ns", "500ms", "999999us"] {
            let err = flags(&args(&format!("--poll {below}")), NOW).err().unwrap();
            assert_eq!(err.code, ExitCode::Usage);
            assert_eq!(
                err.message,
                format!("invalid `--poll` `{below}`: expected a duration of at least `1s` such as `30s` or `1m`")
            );
        }
        assert_eq!(
            flags(&args("--window 0s"), NOW).err().unwrap().message,
            "invalid `--window` `0s`: expected a duration such as `7d`, `36h` or `1d12h`"
        );
        assert!(flags(&args("--listen nowhere"), NOW)
            .err()
            .unwrap()
            .message
            .starts_with("invalid `--listen` address `nowhere`"));
    }

    #[test]
    fn lookback_is_at_most_the_window_and_a_start_counted_back_is_said() {
        let f = flags(&args(""), NOW).unwrap();
        assert_eq!((f.lookback, f.back), (5 * 60 * 1_000_000, Some(0)));
        let f = flags(&args("--lookback 15m --since 1d"), NOW).unwrap();
        assert_eq!((f.lookback, f.back), (15 * 60 * 1_000_000, Some(86_400 * 1_000_000)));
        assert_eq!(flags(&args("--since 2026-11-15T00:00:00Z"), NOW).unwrap().back, None);
        let err = flags(&args("--window 1h --lookback 2h"), NOW).err().unwrap();
        assert_eq!(err.code, ExitCode::Usage);
        assert_eq!(
            err.message,
            "invalid `--lookback` `2h`: longer than `--window` `1h`; give a duration of at most the window"
        );
        assert!(flags(&args("--window 1h --lookback 1h"), NOW).is_ok());
    }

    #[test]
    fn candidates_are_named_by_their_base_name() {
        assert!(flags(&args("-f a/c.yaml -f b/c.yaml"), NOW).is_err());
        assert!(flags(&args("-f a/c.yaml -f b/d.yaml"), NOW).is_ok());
        assert_eq!(
            flags(&args("--categorizer e.yaml"), NOW).err().unwrap().code,
            ExitCode::Usage
        );
    }
}
