//! The checks and refusals several replay verbs make alike, in the same words: flag values
//! (`--backtest-at`, `--max-compute`), `--backtest-at` without an answer (one process's, and
//! `merge`'s of the shards' flag), and a value written as one shell word in a printed command.
//!
//! Owns: those parsers and messages. Must not: read inputs or replay.

use crate::cli::IncidentsArg;
use crate::engine::job_report::plural;
use crate::error::CliError;
use crate::model::duration::GoDuration;
use crate::model::failure_history::Timestamp;
use crate::replay::backtest::Refusal;
use crate::replay::incidents::{Setting, Window};
use crate::replay::run::NoAnswer;
use crate::tune::rank::MaxCompute;

/// The exit status of entries that were not replayed (a job line that cannot be read, a
/// missing policy): 3, the same in `simulate`, `tune` and `suggest`; with `--skip-invalid`
/// none (they are counted and said, [`skipped_note`]).
pub fn not_replayed_code(errors: u64, skip_invalid: bool) -> Option<crate::error::ExitCode> {
    (errors > 0 && !skip_invalid).then_some(crate::error::ExitCode::InvalidInput)
}

/// What every replay verb says on stderr after its answer, whatever the format
/// ([`pod_name_warning`], then [`skipped_note`]), and the exit status of the entries not
/// replayed ([`not_replayed_code`]), which the verb's own status comes after.
pub fn said_after_replay(
    err: &mut dyn std::io::Write,
    style: crate::output::Style,
    recorded: &crate::replay::recorded::Recorded,
    errors: u64,
    skip_invalid: bool,
) -> std::io::Result<Option<crate::error::ExitCode>> {
    pod_name_warning(&mut *err, style, recorded)?;
    skipped_note(err, errors, skip_invalid)?;
    Ok(not_replayed_code(errors, skip_invalid))
}

/// `--skip-invalid`'s count on stderr, after the output, when there were any: `note: 2
/// entries of the history could not be read and were skipped (--skip-invalid)`.
fn skipped_note(err: &mut dyn std::io::Write, errors: u64, skip_invalid: bool) -> std::io::Result<()> {
    if skip_invalid && errors > 0 {
        writeln!(
            err,
            "note: {} of the history could not be read and {} skipped (--skip-invalid)",
            plural(errors, "entry", "entries"),
            if errors == 1 { "was" } else { "were" }
        )?;
    }
    Ok(())
}

/// The warning, once after the answer, that some job ids cannot be part of a pod name
/// (`Recorded::pod_name_warning`), the ids escaped as every id on stderr.
fn pod_name_warning(
    err: &mut dyn std::io::Write,
    style: crate::output::Style,
    recorded: &crate::replay::recorded::Recorded,
) -> std::io::Result<()> {
    match recorded.pod_name_warning() {
        Some(w) => writeln!(err, "{}: {}", style.warning("warning"), crate::output::text::shown(&w)),
        None => Ok(()),
    }
}

/// Contention on (docs/contention.md) with `--shard`, or with `--emit`, which runs the
/// command as shards: refused. The sums are a sweep over every job's times at once, which no
/// shard holds and a merge of shards' totals cannot make (docs/past-one-machine.md).
pub fn contention_in_one_process(contention: bool, shard: bool, emit: bool) -> Result<(), CliError> {
    let flag = match (contention, shard, emit) {
        (true, true, _) => "`--shard` writes one shard's part of the answer",
        (true, false, true) => "`--emit` runs the command as shards",
        _ => return Ok(()),
    };
    Err(CliError::usage(format!(
        "{flag}, and retries while others waited are summed over every job's times in one process: a merge of shards cannot sum them"
    ))
    .with_hint("leave out `--contention on`: the default, `auto`, leaves the section out of a shard and says so; or run one process"))
}

/// `--backtest-at TIME`: an RFC 3339 time.
pub fn parse_backtest_at(text: &str) -> Result<Timestamp, CliError> {
    super::lookout::time_flag("--backtest-at", text)
}

/// `--incidents` and every `--incident FROM/TO` (docs/reference/suggest.md "Incidents").
pub fn parse_incidents(mode: IncidentsArg, given: &[String]) -> Result<Setting, CliError> {
    let window = |text: &String| -> Result<Window, CliError> {
        let Some((from, to)) = text.split_once('/') else {
            return Err(CliError::usage(format!(
                "invalid `--incident` `{text}`: expected `FROM/TO`, two RFC 3339 times such as `2026-11-18T09:00:00Z/2026-11-18T11:30:00Z`"
            )));
        };
        let (from, to) = (
            super::lookout::time_flag("--incident", from)?,
            super::lookout::time_flag("--incident", to)?,
        );
        if to <= from {
            return Err(CliError::usage(format!(
                "invalid `--incident` `{text}`: it ends {} it starts",
                if to == from { "where" } else { "before" }
            )));
        }
        Ok(Window::given(from, to))
    };
    Ok(Setting {
        detect: mode == IncidentsArg::Auto,
        given: given.iter().map(window).collect::<Result<_, _>>()?,
    })
}

/// Why `--backtest-at` has no answer, as the usage error it is (docs/estimates.md).
pub fn backtest_refusal(refused: &NoAnswer, at: &str) -> CliError {
    match refused {
        NoAnswer::NotSubmitted { jobs, first } => CliError::usage(format!(
            "`--backtest-at` splits the jobs by `job.submittedAt`, and {} {} none (the first: job `{first}`)",
            plural(*jobs, "job", "jobs"),
            if *jobs == 1 { "has" } else { "have" }
        ))
        .with_hint("give every job its submission time (`retryctl history` writes it), or leave out --backtest-at"),
        NoAnswer::Refused(Refusal::NoTrain) => CliError::usage(format!(
            "`--backtest-at {at}` leaves no trials to fit the rates: no job submitted before it has a failed run followed by another run"
        ))
        .with_hint("pick a later time"),
        NoAnswer::Refused(Refusal::NoTest) => CliError::usage(format!(
            "`--backtest-at {at}` leaves no trials to test the rates: no job submitted at or after it has a failed run followed by another run"
        ))
        .with_hint("pick an earlier time"),
        NoAnswer::Overflow(o) => CliError::invalid(o.message()),
    }
}

/// A refusal of one process, said by `merge` of the shards' flag (merge itself was given
/// none), with what to do about it: `hint`, which is to run the shards again.
pub fn said_of_the_shards(one: CliError, hint: &str) -> CliError {
    CliError::new(one.code, format!("the shards' {}", one.message)).with_hint(hint)
}

/// [`backtest_refusal`] as `merge` says it: of the shards' `--backtest-at`, with the hint to
/// run them again.
pub fn shards_backtest_refusal(refused: &NoAnswer, at: &str) -> CliError {
    let hint = match refused {
        // A sum of the shards together: not the shards' flag, no shard to run again.
        NoAnswer::Overflow(o) => return CliError::invalid(o.message()),
        NoAnswer::NotSubmitted { .. } => {
            "give every job its submission time (`retryctl history` writes it), or run the shards again without `--backtest-at`"
        }
        NoAnswer::Refused(Refusal::NoTrain) => "run the shards again with a later `--backtest-at`",
        NoAnswer::Refused(Refusal::NoTest) => "run the shards again with an earlier `--backtest-at`",
    };
    said_of_the_shards(backtest_refusal(refused, at), hint)
}

/// `--max-compute`: a duration (`10h`) or a percentage of the baseline's recorded compute
/// (`5%`).
pub fn parse_max_compute(text: &str) -> Result<MaxCompute, CliError> {
    let bad = || {
        CliError::usage(format!(
            "invalid `--max-compute` `{text}`: expected a duration such as `10h` or a percentage of the baseline's recorded compute such as `5%`"
        ))
    };
    match text.strip_suffix('%') {
        Some(p) => p
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && *p >= 0.0)
            .map(MaxCompute::Percent)
            .ok_or_else(bad),
        None => GoDuration::parse(text).map(MaxCompute::Duration).map_err(|_| bad()),
    }
}

/// `text` as one word for the shell, in the commands `tune` and `suggest` print to be run
/// next, so that the line runs as printed: as is when it holds only safe characters; in
/// single quotes when it holds no character a terminal would act on; else in bash's ANSI-C
/// quotes (`$'…'`, bash, zsh and ksh), each such character (a line break, ESC, a
/// bidirectional control: what `output::text::shown` would escape, and so turn into other
/// characters inside single quotes) written as an escape the shell decodes back: `\n`, `\t`,
/// `\r`, else its UTF-8 bytes as `\xHH` (bytes, whatever the shell's locale).
pub fn shell_word(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if safe {
        return text.to_string();
    }
    if !text.chars().any(crate::diag::is_escaped) {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            '\r' => out.push_str(r"\r"),
            c if crate::diag::is_escaped(c) => {
                let mut bytes = [0u8; 4];
                for b in c.encode_utf8(&mut bytes).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn a_word_is_quoted_as_little_as_it_needs() {
        assert_eq!(shell_word("week.jsonl"), "week.jsonl");
        assert_eq!(shell_word("my week's.jsonl"), r"'my week'\''s.jsonl'");
        assert_eq!(shell_word("we\nek's\\x.jsonl"), r"$'we\nek\'s\\x.jsonl'");
        assert_eq!(
            shell_word("a\x1b[2J\u{202e}b\u{85}"),
            r"$'a\x1b[2J\xe2\x80\xaeb\xc2\x85'"
        );
    }
}
