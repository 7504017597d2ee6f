#!/usr/bin/env python3
"""Writes a JSON Lines file of FailureHistory records with about N runs in total, for the
`simulate` benchmark (SPEC §7). Deterministic: the same N gives the same file.

    scripts/gen-histories.py 1000000 > /tmp/histories-1m.jsonl

Jobs run on queue `ml-queue` (testdata/policies/valid: infra + ml-training-oom) with a mix
of preemptions, evictions, OOM kills, plain exit codes, CUDA categories, returned leases,
and a final success; lines leave out apiVersion/kind, as SPEC §3.2 allows.
"""
import json
import random
import sys


def run(rng, k):
    node = f"node-{rng.randrange(200)}"
    r = rng.random()
    if r < 0.30:
        return {"node": node, "queuedFor": f"{rng.randrange(600)}s", "runFor": f"{rng.randrange(1, 7200)}s",
                "conditions": ["Preempted"], "terminationConfirmedAfter": f"{rng.randrange(30)}s"}
    if r < 0.40:
        return {"node": node, "runFor": f"{rng.randrange(1, 7200)}s", "conditions": ["Evicted"]}
    if r < 0.60:
        return {"node": node, "runFor": f"{rng.randrange(1, 7200)}s",
                "containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"},
                               {"name": "log-shipper", "exitCode": 0}]}
    if r < 0.70:
        return {"node": node, "runFor": "12m", "category": "cuda_error", "subcategory": "transient",
                "containers": [{"name": "main", "exitCode": 1, "reason": "Error",
                                "message": "CUDA error: an illegal memory access was encountered"}]}
    if r < 0.80:
        return {"node": node, "outcome": "leaseReturned"}
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
        runs = [run(rng, k) for k in range(n - 1)]
        runs.append({"node": f"node-{rng.randrange(200)}", "runFor": "1h", "outcome": "succeeded"})
        record = {"job": {"id": f"job-{job:07d}", "queue": "ml-queue", "terminationGracePeriod": "30s"},
                  "runs": runs}
        out.write(json.dumps(record, separators=(",", ":")))
        out.write("\n")
        written += n
        job += 1


if __name__ == "__main__":
    main()
