//! The progress bar of a long replay: drawn on stderr only when stderr is a terminal and
//! the source knows its size. Must not: write to stdout or decide anything.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::replay::source::Progress;

/// A bar for a source of `p.total` files or bytes; `None` when nothing should be drawn.
pub fn progress_bar(p: Progress) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() || p.total == 0 {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(p.total), ProgressDrawTarget::stderr());
    let template = if p.bytes {
        "simulating {bar:40} {bytes}/{total_bytes} ({eta} left)"
    } else {
        "simulating {bar:40} {pos}/{len} files ({eta} left)"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}

pub fn finish(bar: &Option<ProgressBar>) {
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}
