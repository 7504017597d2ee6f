#!/usr/bin/env python3
"""Writes testdata/trace/philly.jsonl: a history shaped like a public GPU cluster's trace
converted to FailureHistory lines, for the tests and the benchmark of
what such traces look like to retryctl. Deterministic: the same arguments give the same file.

    scripts/gen-trace.py > testdata/trace/philly.jsonl
    scripts/gen-trace.py --copies 670 > /tmp/trace-3m.jsonl      # about 3,000,000 runs

A trace of that kind records jobs and their attempts, and nothing of why an attempt ended;
converted, each line has:

- an id as the cluster's resource manager wrote it (`application_1506638472019_14213`:
  underscores, which no pod name may hold), a queue (the trace's virtual cluster, six hex
  digits), the job's GPUs (`resources.gpu`, 1 to 16; no CPU), its submission time;
- its attempts as runs in order, each with `startedAt` (RFC 3339, whole seconds, as the trace
  gives times) and `runFor` (whole seconds): no node, no container, no exit code, no reason,
  no condition, no category: every failed run's signature is `unknown`;
- the last attempt's outcome from the job's final status: `Pass` succeeded, `Killed`
  cancelled, `Failed` failed; every attempt before the last failed (the cluster ran another).

About 3,000 jobs and 4,700 attempts: three jobs in four have one attempt; a failed first
attempt is retried more often than not, up to 30 attempts for a few jobs, and a retry
succeeds less often the more the job has failed (what the trace shows).

`--copies K` writes K copies one after another, the k-th shifted K weeks later in every
time and named as the resource manager after a restart k weeks later
(`application_<start + k weeks in ms>_<n>`): a longer history of the same cluster, for the
benchmark (BENCHMARKS.md, "suggest on a trace").
"""
import argparse
import datetime
import random
import sys

JOBS = 3000
START = datetime.datetime(2017, 10, 3, 0, 0, 0, tzinfo=datetime.timezone.utc)
RM_START_MS = 1506638472019  # the resource manager's start, in the ids
SPAN = datetime.timedelta(days=7)  # submissions spread over a week
QUEUES = ["6214e9", "b436b2", "ee9e8c", "e13805", "0e4a51", "103959", "2869ce", "ed69ec", "11cb48", "795a4c"]
GPUS = [1] * 60 + [2] * 15 + [4] * 12 + [8] * 10 + [16] * 3


def rfc3339(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def duration(seconds):
    """Go's form without zero units, as `retryctl history` writes durations."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s else "")
    return out or "0s"


def attempts(rng):
    """The attempts' outcomes: `failed` before the last, the last's from the job's status."""
    if rng.random() < 0.75:
        status = rng.choices(["Pass", "Failed", "Killed"], [70, 18, 12])[0]
        return [status]
    runs = ["Failed"]
    while len(runs) < 30:
        # The deeper the job, the less a retry pays: a job that keeps failing keeps going.
        depth = len(runs)
        p_pass = max(0.06, 0.45 - 0.08 * depth)
        p_stop = 0.2 if depth < 3 else 0.1
        r = rng.random()
        if r < p_pass:
            runs.append("Pass")
            return runs
        if r < p_pass + p_stop:
            runs[-1] = rng.choices(["Failed", "Killed"], [80, 20])[0]
            return runs
        runs.append("Failed")
    return runs


def job_line(rng, n, submitted, shift_weeks):
    statuses = attempts(rng)
    gpus = rng.choice(GPUS)
    rm = RM_START_MS + shift_weeks * 7 * 86_400_000
    t = submitted + datetime.timedelta(seconds=rng.randrange(1, 900))
    runs = []
    for i, status in enumerate(statuses):
        last = i == len(statuses) - 1
        if status == "Pass":
            run_for = int(rng.lognormvariate(8.2, 1.3))  # a few hours, a long tail
        else:
            run_for = int(rng.lognormvariate(5.5, 1.8))  # most failures come early
        run_for = max(1, min(run_for, 30 * 86_400))
        run = {"startedAt": rfc3339(t), "runFor": duration(run_for)}
        if last and status == "Pass":
            run["outcome"] = "succeeded"
        elif last and status == "Killed":
            run["outcome"] = "cancelled"
        runs.append(run)
        t += datetime.timedelta(seconds=run_for + rng.randrange(5, 600))
    job = (
        f'{{"id":"application_{rm}_{n}","queue":"{rng.choice(QUEUES)}",'
        f'"submittedAt":"{rfc3339(submitted)}","resources":{{"gpu":"{gpus}"}}}}'
    )
    run_text = ",".join("{" + ",".join(f'"{k}":"{v}"' for k, v in r.items()) + "}" for r in runs)
    return f'{{"job":{job},"runs":[{run_text}]}}'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=1, help="copies, each a week later (default 1)")
    parser.add_argument("--jobs", type=int, default=JOBS, help=f"jobs of one copy (default {JOBS})")
    args = parser.parse_args()
    out = sys.stdout
    for k in range(args.copies):
        # The same seed for every copy: each copy is the same cluster's week again.
        rng = random.Random(72)
        n = 1500
        times = sorted(rng.random() for _ in range(args.jobs))
        for frac in times:
            n += rng.randrange(1, 6)  # the ids of other clusters' jobs fall between
            submitted = START + k * SPAN + datetime.timedelta(seconds=int(frac * SPAN.total_seconds()))
            out.write(job_line(rng, n, submitted, k) + "\n")


if __name__ == "__main__":
    main()
