//! `--emit kubernetes`: an Indexed Job of N completions (Kubernetes expands
//! `$(JOB_COMPLETION_INDEX)` in each pod's args to its index) and the merge's Job, created
//! suspended, in one YAML stream for `kubectl apply -f`.
//!
//! Every shard runs at once (`parallelism: N`) up to the 100,000 pods Kubernetes lets an
//! Indexed Job run at once; past that, in waves.
//!
//! Kubernetes starts no Job after another: the merge is created with `suspend: true` and
//! resumed by hand once the Indexed Job is complete (the comment says how). Must not: do I/O
//! other than writing to the given writer.

use std::io;

use super::plan::Plan;
use super::pod::{INDEX_VAR, MAX_PARALLELISM};
use super::text::{comment, yaml};

/// Writes the Indexed Job, then `---` and the merge's Job.
pub fn write(plan: &Plan, out: &mut dyn io::Write) -> io::Result<()> {
    let merge_name = format!("{}-merge", plan.job_set);
    let ns = plan
        .namespace
        .as_deref()
        .map(|n| format!(" -n {n}"))
        .unwrap_or_default();
    out.write_all(
        comment(
            &[
                format!(
                    "retryctl {} in {} shards as a Kubernetes Indexed Job (`--emit kubernetes`), then",
                    plan.command, plan.shards
                ),
                "their merge, a Job created suspended: Kubernetes starts no Job after another. Saved as".into(),
                "jobs.yaml:".into(),
                format!("  kubectl{ns} apply -f jobs.yaml"),
                format!(
                    "  kubectl{ns} wait --for=condition=complete --timeout=24h job/{}",
                    plan.job_set
                ),
                format!("  kubectl{ns} patch job/{merge_name} -p '{{\"spec\":{{\"suspend\":false}}}}'"),
                format!("  kubectl{ns} wait --for=condition=complete --timeout=1h job/{merge_name}"),
            ]
            .into_iter()
            .chain(plan.volume_note())
            .collect::<Vec<_>>(),
        )
        .as_bytes(),
    )?;
    let index = format!("$({INDEX_VAR})");
    let shards = serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(plan, &plan.job_set),
        "spec": {
            "completionMode": "Indexed",
            "completions": plan.shards,
            "parallelism": plan.shards.min(MAX_PARALLELISM),
            "template": {"spec": plan.pod_spec("shard", plan.shard_args(&index), true)},
        },
    });
    out.write_all(yaml(&shards).as_bytes())?;
    out.write_all(b"---\n")?;
    out.write_all(
        comment(&[format!(
            "The merge of job/{}'s partials: resume it once that Job is complete.",
            plan.job_set
        )])
        .as_bytes(),
    )?;
    let merge = serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(plan, &merge_name),
        "spec": {
            "suspend": true,
            "template": {"spec": plan.pod_spec("merge", plan.merge_args(), false)},
        },
    });
    out.write_all(yaml(&merge).as_bytes())
}

/// A Job's name, and its namespace when `--namespace` gave one (else kubectl's).
fn metadata(plan: &Plan, name: &str) -> serde_json::Value {
    let mut m = serde_json::json!({"name": name});
    if let Some(ns) = &plan.namespace {
        m["namespace"] = serde_json::Value::String(ns.clone());
    }
    m
}
