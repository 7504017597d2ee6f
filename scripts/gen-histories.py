#!/usr/bin/env python3
"""Writes a JSON Lines file of FailureHistory records with about N runs in total, for the
`simulate` benchmark (docs/reference/bars.md). Deterministic: the same arguments give the same file.

    scripts/gen-histories.py 1000000 > /tmp/histories-1m.jsonl
    scripts/gen-histories.py --realistic 1000000 > /tmp/histories-real-1m.jsonl

Jobs run on queue `ml-queue` (testdata/policies/valid: infra + ml-training-oom): retryable
preemptions, evictions, OOM kills and returned leases within the policies' limits, then a
final run that succeeds (80%) or fails for good (CUDA category, plain exit codes). Lines
leave out apiVersion/kind, as docs/simulate.md allows.

By default the histories follow the decisions exactly (no contradiction, so every run of
every job is evaluated): a run never lands on a node the last retry avoids (infra's
`antiAffinity: node` avoids the node of a preempted or evicted run, and a returned lease
keeps that constraint), and a lease is returned only while the job is below
`maxAttemptedRuns` (5), since the job fails at that bound.

`--submitted` gives each job a submission time (`job.submittedAt`, one every 2 seconds from
2026-11-01T00:00:00Z, in id order), which `--backtest-at` needs; the runs are the same.
`--every=S` spaces them S seconds apart instead (incident detection's benchmark: a span long
beside a job's own hours of runs, so that its first and last hours, when fewer jobs are
failing, do not leave the steady ones above the span's mean).

`--pending` cuts the final run off about one job in seven that has a run before it: the job is
still going on the cluster, its last recorded run a failure the policies retry, so the replay
leaves it Pending and works out the runs it has left (docs/estimates.md). The other jobs are
the same as without the flag.
`--messages` gives every failed container but an OOM-killed one a termination message as real clusters write them:
Python tracebacks, NCCL and CUDA errors, HTTP failures, with numbers, hex addresses and
UUIDs, from 3,000 templates (a word of letters tells each apart, since numbers are masked
by suggest's signatures) drawn with a long tail; the runs are the same as without the flag.
`--contention` gives each job GPU and CPU requests (`job.resources`: 1, 2, 4 or 8 GPUs, 4 to
32 cores) and each run a pool (`a100`, `h100`, `l40`: one a job, as a scheduler keeps a job in
its pool) and a queue of up to 30 minutes (`queuedFor`) where it has none, so that retries
and waits coincide (docs/contention.md's benchmark); with `--submitted` the jobs overlap in
time. The runs' decisions are the same as without the flag.
`--realistic` adds what real cluster data has: about 2% of jobs land a run on an avoided
node (the scheduler relaxed anti-affinity), and about 1% have runs recorded after the job
ended for good (a resubmission under the same id); `simulate` reports both on stderr.
"""
import datetime
import json
import random
import sys

MAX_ATTEMPTED_RUNS = 5
NODES = [f"node-{i}" for i in range(200)]


def retryable(rng, node, oom_left, infra_left, lease_ok):
    """A failure ml-queue's policies retry (infra: Preempted/Evicted, ml-training-oom: OOM),
    or a returned lease (no budget), within the limits left."""
    choices = ["lease"] if lease_ok else []
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


def template_word(t):
    """Template `t`'s own word: letters only, so that masking numbers keeps it."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    word = ""
    t += 26 * 26
    while t:
        word = letters[t % 26] + word
        t //= 26
    return word


ERRORS = ["ValueError", "KeyError", "RuntimeError", "AssertionError", "OSError", "TypeError"]


def message(mrng):
    """A termination message of one of 3,000 templates, the first ones far more often."""
    t = min(int(mrng.paretovariate(0.3)) - 1, 2999)
    w = template_word(t)
    n = mrng.randrange(1, 100000)
    hx = f"0x{mrng.getrandbits(48):012x}"
    uuid = "-".join(f"{mrng.getrandbits(b * 4):0{b}x}" for b in (8, 4, 4, 4, 12))
    family = t % 4
    if family == 0:
        err = ERRORS[t % len(ERRORS)]
        # The error first, then where: what a training script's handler writes to the log.
        return (f"{err}: {w} step {n} failed on tensor at {hx}\nTraceback (most recent call last):\n"
                f"  File \"/app/{w}/train.py\", line {n % 900 + 10}, in <module>\n    main()\n"
                f"  File \"/app/{w}/model.py\", line {n % 400 + 5}, in forward")
    if family == 1:
        return (f"NCCL WARN {w}: call to connect returned Connection refused, retrying; rank {n % 64} "
                f"peer 10.{n % 250}.{n % 7}.{n % 97}:{40000 + n % 9999} comm {hx}")
    if family == 2:
        return f"RuntimeError: CUDA error: an illegal memory access was encountered in kernel {w} at {hx} (device {n % 8})"
    return f"request {uuid} to {w} failed: upstream returned 503 after {n} ms"


def with_messages(mrng, run):
    """`run` with a termination message on every failed container that has none (an OOM kill
    leaves none: the kernel ended the process)."""
    for c in run.get("containers", []):
        if c.get("exitCode", 0) != 0 and "message" not in c and c.get("reason") != "OOMKilled":
            c["message"] = message(mrng)
    return run


def pick(rng, avoid):
    """A node the scheduler may use: not the avoided one."""
    while True:
        node = rng.choice(NODES)
        if node != avoid:
            return node


FLAGS = {"--realistic", "--submitted", "--pending", "--messages", "--contention"}


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        return
    # A flag misspelt would otherwise write a million lines of the wrong history.
    unknown = [a for a in sys.argv[1:] if a.startswith("-") and a not in FLAGS and not a.startswith("--every=")]
    if unknown:
        sys.exit(f"gen-histories.py: unknown flag `{unknown[0]}` (see --help)")
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    realistic = "--realistic" in sys.argv[1:]
    submitted = "--submitted" in sys.argv[1:]
    pending = "--pending" in sys.argv[1:]
    messages = "--messages" in sys.argv[1:]
    contention = "--contention" in sys.argv[1:]
    # Its own generator: the flag leaves every run's decision as it is.
    crng = random.Random(13)
    every = next((float(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--every=")), 2.0)
    # Their own generator: the messages leave every run as it is.
    mrng = random.Random(11)
    # Its own generator: the flag leaves every other job's runs as they are.
    cut = random.Random(7)
    start = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
    total = int(args[0]) if args else 1_000_000
    rng = random.Random(42)
    out = sys.stdout
    written = 0
    job = 0
    while written < total:
        n = min(total - written, rng.randrange(1, 9))
        runs = []
        oom_left, infra_left = 3, 10
        # The node the last retry avoids (infra: the node of a preempted/evicted run).
        avoid = None
        for k in range(n - 1):
            node = pick(rng, avoid)
            kind, r = retryable(rng, node, oom_left, infra_left, k + 1 < MAX_ATTEMPTED_RUNS)
            oom_left -= kind == "oom"
            infra_left -= kind in ("preempted", "evicted")
            if kind in ("preempted", "evicted"):
                avoid = node
            elif kind == "oom":
                avoid = None
            runs.append(r)
        runs.append(final(rng, pick(rng, avoid)))
        if realistic:
            r = rng.random()
            if r < 0.02 and avoid is not None:
                runs[-1]["node"] = avoid
            elif r < 0.03 and runs[-1].get("outcome") != "succeeded":
                runs.append({"node": pick(rng, None), "runFor": "1h", "outcome": "succeeded"})
        if pending and len(runs) > 1 and cut.random() < 1 / 7:
            runs.pop()
        if messages:
            runs = [with_messages(mrng, r) for r in runs]
        record = {"job": {"id": f"job-{job:07d}", "queue": "ml-queue", "terminationGracePeriod": "30s"},
                  "runs": runs}
        if contention:
            record["job"]["resources"] = {"gpu": str(crng.choice([1, 2, 4, 8])), "cpu": str(crng.randrange(4, 33))}
            pool = crng.choice(["a100", "a100", "h100", "l40"])
            for r in runs:
                r["pool"] = pool
                r.setdefault("queuedFor", f"{crng.randrange(1800)}s")
        if submitted:
            at = start + datetime.timedelta(seconds=every * job)
            record["job"]["submittedAt"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        out.write(json.dumps(record, separators=(",", ":")))
        out.write("\n")
        written += len(runs)
        job += 1


if __name__ == "__main__":
    main()
