//! A page counted (docs/watch.md "What it does with a job"): the jobs the `--settle` gate lets
//! through, mapped as `history --lookout-db` maps them, replayed on every core under today's
//! policy and each candidate (`watch::job`, through the one per-job comparison), and added up
//! to what the page commits: its counters, its hours, the jobs counted and the jobs held back.
//!
//! Owns: [`count_page`] and [`Page`]. Must not: read a page's keys or hold a connection
//! (`pages`), commit a page or write `--state` (`poll`), or write stderr itself (its lines go
//! to the poller's log).

use crate::engine::Settings;
use crate::lookout::export_source::ExportSource;
use crate::lookout::Export;
use crate::replay::categorize::Reclassify;
use crate::replay::parallel::{for_each_ordered, Emitted};
use crate::replay::policy_sets::PolicySets;
use crate::replay::Processed;
use crate::watch::job::{count, see};
use crate::watch::metrics::{Counters, Family, Outcome, Reason};
use crate::watch::window::HourlySums;

use super::pages::{Failed, Held, ReadPage};
use super::shared::sign;

/// What a page adds up to, committed whole.
#[derive(Default)]
pub(super) struct Page {
    pub(super) counters: Counters,
    pub(super) window: HourlySums,
    /// Jobs counted (complete, or past `--settle`), with their time.
    pub(super) done: Vec<(i64, String)>,
    /// Jobs held back.
    pub(super) wait: Vec<Held>,
    pub(super) counted: u64,
}

/// The jobs of `page` the gate lets through, replayed under `sets` (with the scheduler's
/// `settings`) on every core and counted; what a job or a row could not be is said (`say`) and
/// counted as a poll error or a row left out. The page's counts, or why it could not be read
/// whole (then nothing of it counts).
pub(super) fn count_page(
    page: ReadPage,
    sets: &PolicySets,
    settings: &Settings,
    say: &dyn Fn(String),
) -> Result<Page, Failed> {
    let Some(rows) = page.rows else {
        return Ok(Page::default());
    };
    let keys = page.keys;
    let names = sets.names();
    let source = ExportSource::new(Export::new(rows), settings.clone(), "lookout-db");
    let export = source.state();
    let work =
        |scratch: &mut Reclassify, job: crate::replay::Decoded<'_>| see(sets, job.settings, job.history, scratch, sign);
    let mut counted = Counters::default();
    let mut window = HourlySums::default();
    let mut jobs = 0u64;
    for_each_ordered(source, None, work, |e| {
        let Emitted::Job(_, processed) = e else { return Ok(true) };
        match processed {
            Processed::Done(seen) => {
                let key = keys.get(seen.job.as_str());
                let outcome = key.map_or(Outcome::Failed, |k| Outcome::of_state(k.state));
                count(&mut counted, &seen, outcome, &names);
                if let Some(k) = key {
                    window.add(k.at, &seen, &names);
                }
                jobs += 1;
                for e in &seen.errors {
                    counted.add(Family::PollErrors, &[Reason::Replay.as_str()], 1);
                    say(format!("warning: {}", shown(e)));
                }
            }
            Processed::Error(e) => {
                counted.add(Family::PollErrors, &[Reason::Replay.as_str()], 1);
                say(format!("warning: {}", shown(&e)));
            }
            // In `history`'s words; counted below, from the export's totals.
            Processed::LeftOut(text) => say(format!("warning: {}", shown(&text))),
            Processed::Invalid(_) => {}
        }
        Ok(true)
    })
    .map_err(|e| Failed::new(Reason::Read, e))?;
    let mut export = export.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = export.error.take() {
        return Err(Failed::new(Reason::Read, e));
    }
    counted.add(Family::UnreadableRows, &[], u128::from(export.totals.left_out()));
    let gated = std::mem::take(&mut *page.gated.lock().unwrap_or_else(|e| e.into_inner()));
    let mut counters = gated.counters;
    counters.merge(&counted);
    Ok(Page {
        counters,
        window,
        done: gated.done,
        wait: gated.wait,
        counted: jobs,
    })
}

/// A line's text with its control characters escaped (a job id's ESC or line break would
/// otherwise end the line or drive the terminal), as history's text is shown.
fn shown(text: &str) -> String {
    crate::output::text::shown(text).into_owned()
}
