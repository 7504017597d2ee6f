#!/usr/bin/env python3
"""Writes a JSON Lines file of FailureHistory records with about N runs in total, for the
`simulate` benchmark (SPEC §7). Deterministic: the same N gives the same file.

    scripts/gen-histories.py 1000000 > /tmp/histories-1m.jsonl

Jobs run on queue `ml-queue` (testdata/policies/valid: infra + ml-training-oom): retryable
preemptions, evictions, OOM kills and returned leases within the policies' limits, then a
final run that succeeds (80%) or fails for good (CUDA category, plain exit codes). The
histories are consistent with the decisions (no contradictions), so every run is evaluated.
Lines leave out apiVersion/kind, as SPEC §3.2 allows.
"""
import json
import random
import sys


def retryable(rng, node, oom_left, infra_left):
    """A failure ml-queue's policies retry (infra: Preempted/Evicted, ml-training-oom: OOM),
    or a returned lease (no budget), within the limits left."""
    choices = ["lease"]
    if infra_left > 0:
        choices += ["preempted"] * 4 + ["evicted"]
    if oom_left > 0:
        choices += ["oom"] * 2
    kind = rng.choice(choices)
    if kind == "preempted":
        return kind, {"node": node, "queuedFor": f"{rng.randrange(600)}s", "runFor": f"{rng.randrange(1, 7200)}s",
                      "conditions": ["Preempted"], "terminationConfirmedAfter": f"{rng.randrange(30)}s"}
    if kind == "evicted":
        return kind, {"node": node, "runFor": f"{rng.randrange(1, 7200)}s", "conditions": ["Evicted"]}
    if kind == "oom":
        return kind, {"node": node, "runFor": f"{rng.randrange(1, 7200)}s",
                      "containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"},
                                     {"name": "log-shipper", "exitCode": 0}]}
    return kind, {"node": node, "outcome": "leaseReturned"}


def final(rng, node):
    """The last run: mostly a success; else a failure no rule retries (fail_default)."""
    r = rng.random()
    if r < 0.8:
        return {"node": node, "runFor": "1h", "outcome": "succeeded"}
    if r < 0.9:
        return {"node": node, "runFor": "12m", "category": "cuda_error", "subcategory": "transient",
                "containers": [{"name": "main", "exitCode": 1, "reason": "Error",
                                "message": "CUDA error: an illegal memory access was encountered"}]}
    return {"node": node, "runFor": f"{rng.randrange(1, 600)}s",
            "containers": [{"name": "main", "exitCode": rng.choice([1, 2, 143])}]}


def main():
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rng = random.Random(42)
    out = sys.stdout
    written = 0
    job = 0
    while written < total:
        n = min(total - written, rng.randrange(1, 9))
        runs = []
        oom_left, infra_left, node = 3, 10, None
        for _ in range(n - 1):
            # infra avoids the node that failed: never reuse the previous node.
            node = rng.choice([x for x in NODES if x != node]) if node else rng.choice(NODES)
            kind, r = retryable(rng, node, oom_left, infra_left)
            oom_left -= kind == "oom"
            infra_left -= kind in ("preempted", "evicted")
            runs.append(r)
        runs.append(final(rng, rng.choice([x for x in NODES if x != node])))
        record = {"job": {"id": f"job-{job:07d}", "queue": "ml-queue", "terminationGracePeriod": "30s"},
                  "runs": runs}
        out.write(json.dumps(record, separators=(",", ":")))
        out.write("\n")
        written += n
        job += 1


NODES = [f"node-{i}" for i in range(200)]

if __name__ == "__main__":
    main()
