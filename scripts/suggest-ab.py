#!/usr/bin/env python3
"""suggest's speed bar (docs/reference/suggest.md "Speed") in interleaved rounds, for one build
or several side by side: every round runs, for every build, `simulate --baseline` and `suggest`
of the same history in a shuffled order, and takes each process's CPU (user + system). Prints
each build's suggest / simulate --baseline as the ratio of the means and per round (mean with
its standard error, median). Interleaving keeps a change in the machine's load out of the ratio
(scripts/bench-suggest.sh's medians of a few rounds move with it). Run from the repository's root.

    python3 scripts/gen-histories.py --pending --messages 1000000 > h.jsonl
    python3 scripts/suggest-ab.py 30 h.jsonl before=OLD/retryctl after=target/profiling/retryctl
"""
import os
import random
import statistics
import subprocess
import sys

# The benchmark's policies (scripts/bench-common.sh): the candidate set, and infra.yaml alone
# as simulate's old side; suggest's baseline is the set (what the cluster runs).
POLICIES = [
    "testdata/policies/valid/infra.yaml",
    "testdata/policies/valid/ml-training-oom.yaml",
    "testdata/policies/valid/ml-queue.yaml",
]


def commands(binary, history):
    files = [a for p in POLICIES for a in ("-f", p)]
    return {
        "simulate": [binary, "simulate", *files, "--baseline", POLICIES[0], "--history", history, "-o", "json"],
        "suggest": [binary, "suggest", "--history", history, "--baseline", *POLICIES, "-o", "json"],
    }


def cpu(argv):
    """The CPU seconds (user + system) of one run of `argv`, its output discarded."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    # suggest exits 1 on a `reject` verdict, its output written whole: a run like any other.
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and not (argv[1] == "suggest" and code == 1):
        sys.exit(f"{' '.join(argv[:2])} exited with status {code}")
    return usage.ru_utime + usage.ru_stime


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, history = int(sys.argv[1]), sys.argv[2]
    builds = dict(arg.split("=", 1) for arg in sys.argv[3:])
    times = {(b, k): [] for b in builds for k in ("simulate", "suggest")}
    for _ in range(rounds):
        runs = list(times)
        random.shuffle(runs)
        for b, k in runs:
            times[(b, k)].append(cpu(commands(builds[b], history)[k]))
    print(f"{rounds} rounds, {os.cpu_count()} cores, load {os.getloadavg()}")
    for b in builds:
        sim, sug = times[(b, "simulate")], times[(b, "suggest")]
        per = [g / s for s, g in zip(sim, sug)]
        sem = statistics.stdev(per) / len(per) ** 0.5 if len(per) > 1 else 0.0
        print(
            f"{b:10} simulate --baseline {statistics.mean(sim):.3f} s, suggest {statistics.mean(sug):.3f} s; "
            f"ratio of the means {statistics.mean(sug) / statistics.mean(sim):.3f}; "
            f"per round {statistics.mean(per):.3f} ±{sem:.3f}, median {statistics.median(per):.3f} (bar: 2)"
        )


if __name__ == "__main__":
    main()
