//! The SchedulerConfig document (docs/simulate.md): the retry settings of an Armada scheduler config.
//!
//! Owns: the type and its decoding. A real Armada scheduler config file is accepted as is:
//! keys outside `scheduling.retryPolicy`, `scheduling.maxAttemptedRuns` and `scheduling.maxRetries` are ignored, and
//! the `apiVersion`/`kind` envelope is optional. Inside `retryPolicy` decoding is strict.
//! Must not: do I/O.

use crate::diag::Diagnostic;
use crate::yaml::{self, Node, Pos, Value};

use super::decode::Decoder;
use super::fields;
use super::policy::Backoff;
use super::validate;
use super::vocabulary::API_V1;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchedulerConfig {
    /// `scheduling.retryPolicy.enabled`; `None` when the file does not say (simulate then
    /// assumes enabled, since simulating a disabled engine is rarely the point).
    pub enabled: Option<bool>,
    pub global_max_retries: Option<u32>,
    pub default_policy_name: Option<String>,
    pub default_backoff: Backoff,
    /// `scheduling.maxAttemptedRuns` (legacy requeue bound, default 5).
    pub max_attempted_runs: Option<u32>,
}

pub fn decode_scheduler_config(dec: &mut Decoder, node: &Node) -> Option<SchedulerConfig> {
    let mut config = SchedulerConfig::default();
    let Some(scheduling) = node.get("scheduling") else {
        return Some(config);
    };
    if let Some(n) = scheduling.get("maxAttemptedRuns").filter(|n| !n.is_null()) {
        config.max_attempted_runs = dec.u32(n, "scheduling.maxAttemptedRuns");
    } else if let Some(n) = scheduling.get("maxRetries").filter(|n| !n.is_null()) {
        // Upstream's scheduler config has only the legacy `maxRetries`: its attempt bound is
        // `maxRetries + 1` (docs/engines.md; both engines read it).
        config.max_attempted_runs = dec.u32(n, "scheduling.maxRetries").map(|r| r.saturating_add(1));
    }
    let Some(rp) = scheduling.get("retryPolicy").filter(|n| !n.is_null()) else {
        return Some(config);
    };
    let f = dec.fields(
        rp,
        "scheduling.retryPolicy",
        &fields::names(fields::SCHEDULER_RETRY_POLICY),
    )?;
    if let Some(n) = f.get("enabled") {
        config.enabled = dec.bool(n, &f.path_of("enabled"));
    }
    if let Some(n) = f.get("globalMaxRetries") {
        config.global_max_retries = dec.u32(n, &f.path_of("globalMaxRetries"));
    }
    if let Some(n) = f.get("defaultPolicyName") {
        config.default_policy_name = dec.string(n, &f.path_of("defaultPolicyName")).filter(|s| !s.is_empty());
    }
    if let Some(n) = f.get("defaultBackoff") {
        let p = f.path_of("defaultBackoff");
        if let Some(b) = dec.fields(n, &p, &fields::names(fields::BACKOFF)) {
            if let Some(v) = b.get("initialDelay") {
                config.default_backoff.initial_delay = dec.duration(v, &b.path_of("initialDelay"));
            }
            if let Some(v) = b.get("maxDelay") {
                config.default_backoff.max_delay = dec.duration(v, &b.path_of("maxDelay"));
            }
            if let Some(v) = b.get("multiplier") {
                config.default_backoff.multiplier = dec.float(v, &b.path_of("multiplier"));
            }
            if let Some(v) = b.get("jitter") {
                config.default_backoff.jitter = dec.float(v, &b.path_of("jitter"));
            }
        }
    }
    Some(config)
}

pub fn validate_scheduler_config(config: &SchedulerConfig) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(name) = &config.default_policy_name {
        if let Some(problem) = validate::name_problem(name) {
            out.push(Diagnostic::error(
                "invalid-name",
                "scheduling.retryPolicy.defaultPolicyName",
                problem,
            ));
        }
    }
    let probe = super::policy::RetryPolicy {
        name: "x".into(),
        backoff: config.default_backoff,
        ..Default::default()
    };
    for d in validate::validate_policy(&probe) {
        out.push(Diagnostic {
            path: d.path.replacen("backoff", "scheduling.retryPolicy.defaultBackoff", 1),
            ..d
        });
    }
    out
}

/// Reads a scheduler config file's text: the first document, with or without envelope.
/// Errors carry positions.
pub fn parse_scheduler_config(text: &str) -> Result<SchedulerConfig, Vec<Diagnostic>> {
    parse_scheduler_document(text).map(|(_, config)| config)
}

/// Like [`parse_scheduler_config`], with the first document's tree as well (an empty mapping
/// for a file with no document): `tune` edits that tree to vary the config.
pub fn parse_scheduler_document(text: &str) -> Result<(Node, SchedulerConfig), Vec<Diagnostic>> {
    let stream = yaml::parse_stream(text);
    if let Some(e) = stream.error {
        return Err(vec![Diagnostic::error(
            "syntax",
            "",
            format!("invalid YAML: {}", e.message),
        )
        .at(e.pos)]);
    }
    let node = stream
        .documents
        .into_iter()
        .find(|d| !d.is_null())
        .unwrap_or_else(|| Node {
            pos: Pos::default(),
            value: Value::Map(Vec::new()),
        });
    let config = scheduler_config_from_node(&node)?;
    Ok((node, config))
}

/// Decodes and validates the tree of a scheduler config (the envelope is optional). Errors
/// carry positions.
pub fn scheduler_config_from_node(node: &Node) -> Result<SchedulerConfig, Vec<Diagnostic>> {
    let mut dec = Decoder::default();
    // The envelope is checked here, not through `document` (which calls this module to
    // decode SchedulerConfig documents): the model has no import circle.
    if let Some(kind) = node.get("kind") {
        let version = node.get("apiVersion");
        if kind.as_scalar() != Some("SchedulerConfig") {
            dec.error(
                kind,
                "unexpected-kind",
                "kind",
                "expected a `SchedulerConfig` document or an Armada scheduler config file",
            );
        } else if version.and_then(Node::as_scalar) != Some(API_V1) {
            dec.error(
                version.unwrap_or(node),
                "unknown-api-version",
                "apiVersion",
                format!("kind `SchedulerConfig` has apiVersion `{API_V1}` only"),
            );
        }
        if dec.has_errors() {
            return Err(dec.diagnostics);
        }
    }
    let config = decode_scheduler_config(&mut dec, node);
    let mut errors: Vec<Diagnostic> = dec.diagnostics;
    if let Some(c) = &config {
        for d in validate_scheduler_config(c) {
            let pos = super::decode::locate(node, &d.path);
            errors.push(Diagnostic { pos, ..d });
        }
    }
    match config {
        Some(c) if errors.is_empty() => Ok(c),
        _ => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_config_with_other_keys() {
        let text = "grpc:\n  port: 50052\nscheduling:\n  maxRetries: 3\n  maxAttemptedRuns: 4\n  retryPolicy:\n    enabled: true\n    globalMaxRetries: 20\n    defaultPolicyName: default\n    defaultBackoff: {initialDelay: 0s, maxDelay: 10m, multiplier: 2.0}\n  nodeIdLabel: kubernetes.io/hostname\n";
        let c = parse_scheduler_config(text).unwrap();
        assert_eq!(c.global_max_retries, Some(20));
        assert_eq!(c.enabled, Some(true));
        assert_eq!(c.max_attempted_runs, Some(4));
        assert_eq!(c.default_policy_name.as_deref(), Some("default"));
        // Without maxAttemptedRuns, upstream's legacy maxRetries + 1 bounds the attempts.
        let c = parse_scheduler_config("scheduling:\n  maxRetries: 3\n").unwrap();
        assert_eq!(c.max_attempted_runs, Some(4));
    }

    #[test]
    fn typo_inside_retry_policy_is_an_error() {
        let text = "scheduling:\n  retryPolicy:\n    globalMaxRetry: 20\n";
        let e = parse_scheduler_config(text).unwrap_err();
        assert!(e[0].message.contains("did you mean `globalMaxRetries`"), "{e:?}");
        assert_eq!(e[0].pos.unwrap().line, 3);
    }
}
