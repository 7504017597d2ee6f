//! The settings a job of a history is replayed under ([`Overrides`]): its config's, with
//! `--global-max-retries` / `--default-policy` over them. Pure.

use crate::engine::Settings;
use crate::model::scheduler::SchedulerConfig;

/// `--global-max-retries` / `--default-policy`, applied over whichever config a job gets,
/// and the values a config takes where it says nothing.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub global_max_retries: Option<u32>,
    pub default_policy: Option<String>,
    /// What a config that says nothing of a setting gets: the design's defaults (`None`), or
    /// under `--engine upstream`, upstream's shipped ones ([`Settings::upstream_shipped`];
    /// `commands::replay::sides::settings` decides).
    pub defaults: Option<Settings>,
}

impl Overrides {
    pub fn apply(&self, config: &SchedulerConfig) -> Settings {
        let mut s = match &self.defaults {
            Some(d) => Settings::from_config_over(config, d),
            None => Settings::from_config(config),
        };
        if let Some(g) = self.global_max_retries {
            s.global_max_retries = g;
        }
        if let Some(d) = &self.default_policy {
            s.default_policy_name = Some(d.clone());
        }
        s
    }
}
