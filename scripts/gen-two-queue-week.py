#!/usr/bin/env python3
"""A cluster of two queues sharing one executor config, and its week, for suggest's speed when
its proposal changes the cluster's categorizer (scripts/bench-suggest-cluster.sh): what
tests/integration/suggest_cluster.rs builds (`two_queues`, `two_queue_week`: the route's week,
25 jobs of `ml` and 10 of `batch` whose image pull backs off once, which makes suggest split
`infrastructure/image-pull`), repeated with ids of their own until the week holds about RUNS
runs. Writes DIR/week.jsonl and DIR/current/ (policies, queues, the deployed executor config).

    python3 scripts/gen-two-queue-week.py RUNS DIR
"""
import json
import os
import shutil
import sys

POLICIES = """apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: ml-today
retryLimit: 3
defaultAction: Retry
rules:
  - action: Retry
    onCategory: oom
  - action: Retry
    onCategory: app-42
---
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: batch-today
retryLimit: 3
defaultAction: Fail
rules:
  - action: Retry
    onCategory: infrastructure
"""


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        return
    if len(sys.argv) != 3 or not sys.argv[1].isdigit():
        sys.exit("usage: python3 scripts/gen-two-queue-week.py RUNS DIR (RUNS a whole number)")
    runs, out = int(sys.argv[1]), sys.argv[2]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    current = os.path.join(out, "current")
    os.makedirs(current, exist_ok=True)
    shutil.copy(os.path.join(root, "testdata/route/current/executor.yaml"), current)
    with open(os.path.join(current, "policies.yaml"), "w") as f:
        f.write(POLICIES)
    with open(os.path.join(current, "queues.yaml"), "w") as f:
        for q, p in [("ml", "ml-today"), ("batch", "batch-today")]:
            f.write(f"---\napiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: {q}\npriorityFactor: 1\nretryPolicies: [{p}]\n")
    week = [json.loads(l) for l in open(os.path.join(root, "testdata/route/week.jsonl")) if l.strip()]
    pulled = next(j for j in week if j["runs"][0].get("executorPath") == "stuckPod")
    first = dict(pulled["runs"][0])
    first.pop("category", None)
    first.pop("subcategory", None)
    text = first["podError"].rsplit("\n", 1)[0]
    first["podError"] = f'{text}\nBack-off pulling image "registry/team/model:v9": NotFound'

    def pull(queue, id):
        return {"apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
                "job": {"id": id, "queue": queue, "submittedAt": "2026-11-16T01:00:00Z",
                        "resources": {"cpu": "4", "gpu": "1"}},
                "runs": [first, {"node": "node-02", "queuedFor": "10s", "runFor": "30m", "outcome": "succeeded"}]}

    jobs = week + [pull("ml", f"01m7zzmlpull{k:02}") for k in range(25)] + [pull("batch", f"01m7zzbatch{k:02}") for k in range(10)]
    per_copy = sum(len(j["runs"]) for j in jobs)
    copies = max(1, round(runs / per_copy))
    with open(os.path.join(out, "week.jsonl"), "w") as f:
        for c in range(copies):
            for j in jobs:
                j = dict(j, job=dict(j["job"], id=f"{j['job']['id']}{c:04d}" if copies > 1 else j["job"]["id"]))
                f.write(json.dumps(j, separators=(",", ":")) + "\n")
    print(f"{copies} copies of {len(jobs)} jobs, {copies * per_copy} runs", file=sys.stderr)


main()
