//! The inputs both engines take (docs/engines.md): the scheduler's [`Settings`], which engine
//! decides ([`EngineKind`]) and why ([`EngineFrom`]), the job annotations ([`POLICY_ANNOTATION`],
//! [`FAIL_FAST_ANNOTATION`]), the default grace period, and the effective policy names
//! ([`effective_policy_names`]).
//!
//! Owns: those values and the one rule that orders the names. Must not: decide anything or
//! import another part of the engine; every engine and the simulator read it.

use crate::model::duration::GoDuration;
use crate::model::policy::Backoff;
use crate::model::scheduler::SchedulerConfig;

/// The job annotation that adds policies (docs/engines.md).
pub const POLICY_ANNOTATION: &str = "armadaproject.io/retry-policy";
/// The job annotation that bypasses the engine (docs/engines.md).
pub const FAIL_FAST_ANNOTATION: &str = "armadaproject.io/failFast";

/// Armada's default termination grace period for a job.
pub const DEFAULT_GRACE: GoDuration = GoDuration(1_000_000_000);

/// Where the engine came from (docs/engines.md "Which engine decides").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineFrom {
    /// `--engine`.
    Flag,
    /// The `--baseline` files' RetryPolicy documents, all `armadaproject.io/v1beta1` (upstream)
    /// or not (design): what they are, in words (`is armadaproject.io/v1`).
    Baseline(&'static str),
    /// `--baseline-from-cluster`: upstream's server stores today's Armada's policies.
    Cluster,
    /// No baseline to take a dialect from: the design's.
    NoBaseline,
}

/// Which engine decides (docs/engines.md): the design (the default) or the engine
/// upstream Armada ships today (`upstream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum EngineKind {
    #[default]
    Design,
    Upstream,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Design => "design",
            EngineKind::Upstream => "upstream",
        }
    }
}

/// The scheduler's retry settings, resolved (docs/simulate.md defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub enabled: bool,
    pub global_max_retries: u32,
    pub default_policy_name: Option<String>,
    pub default_backoff: Backoff,
    pub max_attempted_runs: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            global_max_retries: 20,
            default_policy_name: None,
            default_backoff: Backoff::default(),
            max_attempted_runs: 5,
        }
    }
}

impl Settings {
    /// What today's Armada runs with when its scheduler config says nothing of retries: the
    /// values upstream ships in `config/scheduler/config.yaml` at commit `207cc9e`
    /// (docs/engines.md "The scheduler's settings"): `retryPolicy.globalMaxRetries: 5`, the
    /// engine's cap, and `maxRetries: 3`, whose `+ 1` bounds the legacy path's attempts.
    /// Upstream ships `retryPolicy.enabled: false`; a replay assumes the engine on, as it does
    /// for a config that does not say.
    pub const UPSTREAM_GLOBAL_MAX_RETRIES: u32 = 5;
    pub const UPSTREAM_MAX_RETRIES: u32 = 3;

    /// Upstream's shipped defaults ([`Settings::UPSTREAM_GLOBAL_MAX_RETRIES`]), the engine on.
    pub fn upstream_shipped() -> Settings {
        Settings {
            global_max_retries: Self::UPSTREAM_GLOBAL_MAX_RETRIES,
            max_attempted_runs: Self::UPSTREAM_MAX_RETRIES + 1,
            ..Settings::default()
        }
    }

    /// `c`, the design's defaults where it says nothing.
    pub fn from_config(c: &SchedulerConfig) -> Settings {
        Settings::from_config_over(c, &Settings::default())
    }

    /// `c`, `d`'s values where it says nothing.
    pub fn from_config_over(c: &SchedulerConfig, d: &Settings) -> Settings {
        Settings {
            enabled: c.enabled.unwrap_or(d.enabled),
            global_max_retries: c.global_max_retries.unwrap_or(d.global_max_retries),
            default_policy_name: c.default_policy_name.clone().or_else(|| d.default_policy_name.clone()),
            default_backoff: c.default_backoff,
            max_attempted_runs: c.max_attempted_runs.unwrap_or(d.max_attempted_runs),
        }
    }
}

/// Where a name in the effective list came from, for "missing policy" errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameOrigin {
    Queue(String),
    /// `--retry-policy` or, without it, every policy document given.
    Given,
    Annotation,
    DefaultPolicy,
}

impl std::fmt::Display for NameOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameOrigin::Queue(q) => write!(f, "queue `{q}`"),
            NameOrigin::Given => write!(f, "--retry-policy"),
            NameOrigin::Annotation => write!(f, "the job annotation `{POLICY_ANNOTATION}`"),
            NameOrigin::DefaultPolicy => write!(f, "the scheduler's defaultPolicyName"),
        }
    }
}

/// docs/engines.md: the effective policy names, in order, each with who referenced it.
pub fn effective_policy_names(
    base: &[String],
    base_source: &NameOrigin,
    annotation: Option<&str>,
    default_policy: Option<&str>,
) -> Vec<(String, NameOrigin)> {
    let mut out: Vec<(String, NameOrigin)> = Vec::new();
    for name in base {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.clone(), base_source.clone()));
        }
    }
    for name in annotation
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), NameOrigin::Annotation));
        }
    }
    if out.is_empty() {
        if let Some(d) = default_policy {
            out.push((d.to_string(), NameOrigin::DefaultPolicy));
        }
    }
    out
}
