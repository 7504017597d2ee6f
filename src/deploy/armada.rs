//! `--emit armada`: two `armadactl submit` files in one YAML stream, the shards' job set (one
//! job per shard, its index written in its args) and the merge's.
//!
//! Armada has no dependencies between jobs, and `armadactl submit` reads the first document
//! of a file only: the merge is submitted by hand once the shards have succeeded (the first
//! document's comment says how). Must not: do I/O other than writing to the given writer.

use std::io;

use super::plan::Plan;
use super::text::{comment, list_item, yaml};

/// Writes the shards' submit file, then `---` and the merge's.
pub fn write(plan: &Plan, out: &mut dyn io::Write) -> io::Result<()> {
    let queue = plan.armada_queue.as_deref().unwrap_or_default();
    let namespace = plan.namespace.as_deref().unwrap_or("default");
    let merge_set = format!("{}-merge", plan.job_set);
    out.write_all(
        comment(
            &[
                format!(
                    "retryctl {} in {} shards on Armada (`--emit armada`), then their merge.",
                    plan.command, plan.shards
                ),
                "armadactl submit reads the first document of a file only, and Armada starts no job".into(),
                "after another: submit the shards, wait until they have succeeded, then submit the".into(),
                "second document, the merge. Saved as jobs.yaml:".into(),
                "  csplit --quiet --prefix=jobs- jobs.yaml '/^---$/'".into(),
                "  armadactl submit jobs-00".into(),
                format!("  armadactl watch {queue} {} --exit-if-inactive", plan.job_set),
                "  armadactl submit jobs-01".into(),
                format!("  armadactl watch {queue} {merge_set} --exit-if-inactive"),
            ]
            .into_iter()
            .chain(plan.volume_note())
            .collect::<Vec<_>>(),
        )
        .as_bytes(),
    )?;
    out.write_all(yaml(&serde_json::json!({"queue": queue, "jobSetId": plan.job_set})).as_bytes())?;
    out.write_all(b"jobs:\n")?;
    for i in 0..plan.shards {
        let job = serde_json::json!({
            "namespace": namespace,
            "podSpec": plan.pod_spec("shard", plan.shard_args(&i.to_string()), true),
        });
        out.write_all(list_item(&yaml(&job)).as_bytes())?;
    }
    out.write_all(b"---\n")?;
    out.write_all(
        comment(&[format!(
            "The merge of the {} shards above: submit it once they have all succeeded.",
            plan.job_set
        )])
        .as_bytes(),
    )?;
    out.write_all(yaml(&serde_json::json!({"queue": queue, "jobSetId": merge_set})).as_bytes())?;
    out.write_all(b"jobs:\n")?;
    let job = serde_json::json!({
        "namespace": namespace,
        "podSpec": plan.pod_spec("merge", plan.merge_args(), false),
    });
    out.write_all(list_item(&yaml(&job)).as_bytes())
}
