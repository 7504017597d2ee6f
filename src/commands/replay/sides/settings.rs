//! The scheduler's settings a replay's jobs get (docs/simulate.md "Inputs"): the
//! `--scheduler-config` file, read once, and the flags that override it
//! (`--global-max-retries`, `--default-policy`).
//!
//! Owns: reading the file (once, for every verb and every pass) and what the overrides make
//! of it. Must not: replay, or read anything else.

use std::path::Path;

use crate::error::CliError;
use crate::input::{self, SchedulerSource};
use crate::model::scheduler::SchedulerConfig;
use crate::replay::source::Overrides;

/// The scheduler config and its overrides, resolved.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--scheduler-config`'s file as `tune` varies it (its document), when given.
    pub source: Option<SchedulerSource>,
    /// What the file decodes to (the defaults without one).
    pub base: SchedulerConfig,
    pub overrides: Overrides,
}

impl Settings {
    /// `file` read (a bad one is exit 3 naming it) and the overrides given.
    pub fn read(file: Option<&Path>, overrides: Overrides) -> Result<Settings, CliError> {
        let source = file.map(input::read_scheduler_source).transpose()?;
        let base = source.as_ref().map(|s| s.config.clone()).unwrap_or_default();
        Ok(Settings {
            source,
            base,
            overrides,
        })
    }

    /// The settings every job gets: the file's, overridden by the flags.
    pub fn applied(&self) -> crate::engine::Settings {
        self.overrides.apply(&self.base)
    }
}
