//! Progress on stderr, drawn only when stderr is a terminal: the bar of a long replay (when
//! the source knows its size) and the line of a long read from Lookout ([`ReadProgress`]).
//! Must not: write to stdout or decide anything.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::replay::source::{Counted, Progress};

/// A bar for a source of `p.total` files or bytes, or a spinner with the jobs read and the
/// rate for a source whose size is not known (Lookout: docs/lookout.md's long reads show a sign of
/// life from the first page on); `None` when nothing should be drawn.
pub fn progress_bar(p: Progress) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() || (p.total == 0 && p.counted != Counted::Jobs) {
        return None;
    }
    let (len, template) = match p.counted {
        Counted::Bytes => (Some(p.total), "simulating {bar:40} {bytes}/{total_bytes} ({eta} left)"),
        Counted::Files => (Some(p.total), "simulating {bar:40} {pos}/{len} files ({eta} left)"),
        Counted::Jobs => (None, "{spinner} simulating: {human_pos} jobs read ({rate} jobs/s)"),
    };
    let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        // Whole jobs a second (indicatif's `per_sec`, a moving rate, has decimals); `history`'s
        // line (`ReadProgress`) says the average since its start, as it also counts runs.
        bar.set_style(
            style.with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}", HumanCount(s.per_sec() as u64));
            }),
        );
    }
    Some(bar)
}

pub fn finish(bar: &Option<ProgressBar>) {
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// The line of a read whose size is not known (Lookout's database or API): a spinner, the
/// jobs and runs read and the rate, from the first row on. Nothing is drawn when stderr is
/// not a terminal. Cleared when finished or dropped (an error then prints on a clean line).
pub struct ReadProgress {
    bar: Option<ProgressBar>,
    label: &'static str,
    started: Instant,
    /// When the message was last set: it is set at most every [`READ_REDRAW`].
    shown: Option<Instant>,
}

/// How often the counts are redrawn (indicatif draws at most 20 times a second anyway).
const READ_REDRAW: Duration = Duration::from_millis(100);

impl ReadProgress {
    /// Starts drawing `label: 0 jobs, 0 runs` (when stderr is a terminal).
    pub fn start(label: &'static str) -> ReadProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
                bar.set_style(style);
            }
            // No steady tick: a command holds stderr's lock while it runs, and indicatif's
            // ticker thread would wait for it with the bar's own lock held. The line is drawn
            // from this thread, as rows arrive.
            bar
        });
        let mut p = ReadProgress {
            bar,
            label,
            started: Instant::now(),
            shown: None,
        };
        p.update(0, 0);
        p
    }

    /// The counts so far: cheap enough to call for every job.
    pub fn update(&mut self, jobs: u64, runs: u64) {
        let Some(bar) = &self.bar else { return };
        let now = Instant::now();
        if self.shown.is_some_and(|t| now.duration_since(t) < READ_REDRAW) {
            return;
        }
        self.shown = Some(now);
        let secs = now.duration_since(self.started).as_secs_f64();
        let rate = if secs >= 0.5 {
            format!(" ({} jobs/s)", HumanCount((jobs as f64 / secs) as u64))
        } else {
            String::new()
        };
        bar.set_message(format!(
            "{}: {} jobs, {} runs read{rate}",
            self.label,
            HumanCount(jobs),
            HumanCount(runs)
        ));
        bar.tick();
    }

    /// Runs `f` (which writes to stderr) with the line cleared, then redraws it.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
}

impl Drop for ReadProgress {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
