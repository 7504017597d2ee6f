//! What a replay writes to stderr, whatever the format on stdout: its messages (errors,
//! warnings, invalid history files), capped, and the progress bar.
//!
//! Owns: [`Stderr`], which every replay's sink and `tune`'s sweep write through; the words of
//! those messages; [`invalid_text`], an invalid file's report as a partial result keeps it.
//! Must not: write to stdout, count jobs, or decide exit codes.

use std::io::{self, Write};

use indicatif::ProgressBar;

use crate::replay::sink::Message;
use crate::replay::source::Progress;

use super::progress::finish;
use super::report;
use super::text::shown;
use super::Style;

/// Messages printed per category before "… and N more" (bulk input can have millions).
const MAX_MESSAGES: u64 = 100;

/// Capped stderr messages.
#[derive(Debug, Default)]
pub struct Messages {
    count: u64,
}

impl Messages {
    pub fn write(&mut self, err: &mut dyn Write, text: &str) -> io::Result<()> {
        self.count += 1;
        if self.count <= MAX_MESSAGES {
            writeln!(err, "{text}")?;
        }
        Ok(())
    }

    pub fn finish(&self, err: &mut dyn Write) -> io::Result<()> {
        if self.count > MAX_MESSAGES {
            writeln!(err, "… and {} more messages", self.count - MAX_MESSAGES)?;
        }
        Ok(())
    }
}

/// The scheduler's settings a replay assumed for today's Armada, said once on stderr
/// (docs/engines.md "The scheduler's settings"): upstream's shipped `globalMaxRetries` (or
/// `--global-max-retries`'s, `overridden`) and `maxRetries`, and that upstream ships the
/// engine off.
pub fn upstream_defaults_assumed(global_max_retries: u32, overridden: bool, max_retries: u32) -> String {
    let global = if overridden {
        format!("globalMaxRetries {global_max_retries} (--global-max-retries)")
    } else {
        format!("globalMaxRetries {global_max_retries}")
    };
    format!(
        "scheduler: upstream's shipped defaults: {global}, maxRetries {max_retries} ({} attempts); \
         the retry engine assumed enabled: pass --scheduler-config",
        max_retries + 1
    )
}

/// The warning for a job whose queue is not among the documents.
pub fn missing_queue_warning(job: &str, queue: &str, retry_policy: bool, given: &[String]) -> String {
    let what = if retry_policy {
        "--retry-policy"
    } else {
        "every policy given"
    };
    let names: Vec<String> = given.iter().map(|n| format!("`{n}`")).collect();
    let names = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    format!(
        "job `{}`: queue `{}` is not among the documents given with -f; using {what} ({names}) for the jobs of this queue",
        shown(job),
        shown(queue)
    )
}

/// An invalid history file's diagnostics as [`Stderr`] writes them, without colour: what a
/// partial result holds (`Message::Rendered`).
pub fn invalid_text(file: &crate::input::SourceFile) -> String {
    let mut text = Vec::new();
    let _ = report::write_text(std::slice::from_ref(file), Style::default(), &mut Vec::new(), &mut text);
    String::from_utf8_lossy(&text).into_owned()
}

/// What every replay's sink writes to stderr, whatever its format: the replay's messages
/// (capped at [`MAX_MESSAGES`], then a count), invalid history files, the progress bar.
pub struct Stderr<'a> {
    err: &'a mut dyn Write,
    style: Style,
    messages: Messages,
    bar: Option<ProgressBar>,
    /// The policies given on the command line came from `--retry-policy` (not every policy).
    retry_policy_flag: bool,
    /// `--skip-invalid`: an entry not replayed is a warning (the command exits 0).
    skipping: bool,
}

impl<'a> Stderr<'a> {
    pub fn new(err: &'a mut dyn Write, style: Style, bar: Option<ProgressBar>, retry_policy_flag: bool) -> Self {
        Stderr {
            err,
            style,
            messages: Messages::default(),
            bar,
            retry_policy_flag,
            skipping: false,
        }
    }

    /// With `--skip-invalid`: the entries that are not replayed are said as warnings, since
    /// they do not fail the command.
    pub fn skipping(mut self, on: bool) -> Self {
        self.skipping = on;
        self
    }

    /// The colours of the run, which a format's words on stderr use too.
    pub fn style(&self) -> Style {
        self.style
    }

    pub fn message(&mut self, m: &Message<'_>) -> io::Result<()> {
        let style = self.style;
        let line = match m {
            Message::Error(text) if self.skipping => format!("{}: {}", style.warning("warning"), shown(text)),
            Message::Error(text) => format!("{}: {}", style.error("error"), shown(text)),
            Message::Invalid(file) => {
                return report::write_text(std::slice::from_ref(*file), style, &mut Vec::new(), self.err).map(|_| ())
            }
            // A shard's `invalid_text`, read back from its partial (a file like any other):
            // its lines kept, anything else escaped.
            Message::Rendered(text) => return super::text::Escaping::new(&mut *self.err).write_all(text.as_bytes()),
            Message::MissingQueue { job, queue, given } => format!(
                "{}: {}",
                style.warning("warning"),
                missing_queue_warning(job, queue, self.retry_policy_flag, given)
            ),
            // As `history` prints it (`output::history::left_out_line`).
            Message::LeftOut(text) => format!("{}: {}", style.warning("warning"), shown(text)),
            Message::Contradiction { job, text } => format!(
                "{}: job `{}`: history contradicts the decisions: {}",
                style.warning("warning"),
                shown(job),
                shown(text)
            ),
            Message::ExpectationFailed { job, text } => format!(
                "{}: job `{}`: expectation not met: {}",
                style.error("error"),
                shown(job),
                shown(text)
            ),
        };
        self.messages.write(self.err, &line)
    }

    pub fn progress(&mut self, at: Progress) {
        if let Some(b) = &self.bar {
            b.set_position(at.done);
        }
    }

    /// Clears the bar and says how many messages were left out; then the writer, for what
    /// a format writes to stderr at the end.
    pub fn finish(&mut self) -> io::Result<&mut dyn Write> {
        finish(&self.bar);
        self.messages.finish(self.err)?;
        Ok(&mut *self.err)
    }
}
