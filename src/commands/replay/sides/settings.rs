//! The scheduler's settings a replay's jobs get (docs/simulate.md "Inputs"): the
//! `--scheduler-config` file, read once, and the flags that override it
//! (`--global-max-retries`, `--default-policy`); what the file does not say (all of it
//! without one), the engine's defaults (docs/engines.md "The scheduler's settings"): the
//! design's, or under the upstream engine the values upstream ships, said once on stderr when
//! no file was given.
//!
//! Owns: reading the file (once, for every verb and every pass), which defaults a config
//! that says nothing takes, and what the overrides make of it. Must not: replay, or read
//! anything else.

use std::io::Write;
use std::path::Path;

use crate::engine::EngineKind;
use crate::error::CliError;
use crate::input::{self, SchedulerSource};
use crate::model::scheduler::SchedulerConfig;
use crate::replay::source::Overrides;

/// The scheduler config and its overrides, resolved.
#[derive(Debug, Clone, Default)]
pub struct SchedulerSettings {
    /// `--scheduler-config`'s file as `tune` varies it (its document), when given.
    pub source: Option<SchedulerSource>,
    /// What the file decodes to (the defaults without one).
    pub base: SchedulerConfig,
    pub overrides: Overrides,
}

impl SchedulerSettings {
    /// `file` read (a bad one is exit 3 naming it) and the overrides given.
    pub fn read(file: Option<&Path>, overrides: Overrides) -> Result<SchedulerSettings, CliError> {
        let source = file.map(input::read_scheduler_source).transpose()?;
        let base = source.as_ref().map(|s| s.config.clone()).unwrap_or_default();
        Ok(SchedulerSettings {
            source,
            base,
            overrides,
        })
    }

    /// The settings every job gets: the file's, overridden by the flags.
    pub fn applied(&self) -> crate::engine::Settings {
        self.overrides.apply(&self.base)
    }

    /// These settings for a replay whose candidates `engine` decides (docs/engines.md "The
    /// scheduler's settings"): under the upstream engine, what a config does not say (all of
    /// it without `--scheduler-config`) is what upstream ships
    /// (`engine::Settings::upstream_shipped`), as a deployed scheduler's config overlays the
    /// shipped one; without a config file that is said once on `err`. The design engine keeps
    /// the design's. The scheduler's settings are every job's, both sides' (a comparison whose
    /// baseline has another engine, `--baseline-engine`, gets the candidates'; a config file
    /// sets them for both).
    pub fn for_engine(mut self, engine: EngineKind, err: &mut dyn Write) -> std::io::Result<SchedulerSettings> {
        if engine != EngineKind::Upstream {
            return Ok(self);
        }
        self.overrides.defaults = Some(crate::engine::Settings::upstream_shipped());
        if let Some(note) = self.assumed() {
            writeln!(err, "{note}")?;
        }
        Ok(self)
    }

    /// What the replay assumed of the scheduler, as stderr says it ([`SchedulerSettings::for_engine`]):
    /// `None` when nothing was (a config file was given, or the design engine decides). A
    /// sharded run records it, so that `merge` says it as one process does.
    pub fn assumed(&self) -> Option<String> {
        if self.source.is_some() {
            return None;
        }
        self.overrides.defaults.as_ref()?;
        Some(crate::output::stderr::upstream_defaults_assumed(
            self.applied().global_max_retries,
            self.overrides.global_max_retries.is_some(),
            crate::engine::Settings::UPSTREAM_MAX_RETRIES,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(file: Option<&str>, global: Option<u32>) -> SchedulerSettings {
        let source = file.map(|text| SchedulerSource::parse("scheduler.yaml".into(), text).unwrap());
        SchedulerSettings {
            base: source.as_ref().map(|s| s.config.clone()).unwrap_or_default(),
            source,
            overrides: Overrides {
                global_max_retries: global,
                ..Overrides::default()
            },
        }
    }

    /// (globalMaxRetries, maxAttemptedRuns, what stderr said) for `engine`.
    fn resolved(s: SchedulerSettings, engine: EngineKind) -> (u32, u32, String) {
        let mut err = Vec::new();
        let s = s.for_engine(engine, &mut err).unwrap();
        let applied = s.applied();
        (
            applied.global_max_retries,
            applied.max_attempted_runs,
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn upstream_without_a_config_assumes_what_upstream_ships_and_says_so() {
        assert_eq!(
            resolved(settings(None, None), EngineKind::Upstream),
            (
                5,
                4,
                "scheduler: upstream's shipped defaults: globalMaxRetries 5, maxRetries 3 (4 attempts); \
                 the retry engine assumed enabled: pass --scheduler-config\n"
                    .into()
            )
        );
        assert_eq!(
            resolved(settings(None, Some(8)), EngineKind::Upstream),
            (
                8,
                4,
                "scheduler: upstream's shipped defaults: globalMaxRetries 8 (--global-max-retries), maxRetries 3 \
                 (4 attempts); the retry engine assumed enabled: pass --scheduler-config\n"
                    .into()
            )
        );
        // The design keeps the design's, and says nothing.
        assert_eq!(
            resolved(settings(None, None), EngineKind::Design),
            (20, 5, String::new())
        );
    }

    #[test]
    fn a_config_says_its_own_and_the_engine_fills_what_it_leaves_out() {
        let partial = "scheduling:\n  retryPolicy:\n    enabled: true\n";
        assert_eq!(
            resolved(settings(Some(partial), None), EngineKind::Upstream),
            (5, 4, String::new())
        );
        assert_eq!(
            resolved(settings(Some(partial), None), EngineKind::Design),
            (20, 5, String::new())
        );
        let whole = "scheduling:\n  maxRetries: 7\n  retryPolicy:\n    globalMaxRetries: 12\n";
        assert_eq!(
            resolved(settings(Some(whole), None), EngineKind::Upstream),
            (12, 8, String::new())
        );
    }
}
