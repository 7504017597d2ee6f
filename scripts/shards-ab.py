#!/usr/bin/env python3
"""The shard bar (docs/reference/bars.md), measured in interleaved rounds, for one build or
several side by side: each round runs, in a shuffled order, for every build, one process
printing `-o json` and each N's shards (`-o partial`, one after the other) plus their
`merge -o json`. A host whose speed drifts then slows every figure alike, where
`scripts/bench-shards.sh` runs each set in turn.

    scripts/shards-ab.py ROUNDS HISTORY NAME=BINARY [NAME=BINARY …]
    NS="4 16" (the N measured)

HISTORY is a JSON Lines file (`python3 scripts/gen-histories.py 1000000 > h.jsonl`); the
command is `bench-shards.sh`'s plan (`simulate` with the benchmark's policies and
`--baseline`). CPU is user + system from the kernel's accounting of each process (wait4),
summed over a set's processes. Each build's ratios are its sets against its own `-o json`:
the ratio of the means and of the medians, and per round (each round's set against that
round's `-o json`) the mean with its standard error and the median. Every merge's output is
compared with its build's `-o json`, byte for byte. Run from the repository's root.
"""
import filecmp
import os
import random
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cputime import cpu  # noqa: E402

POLICIES = [
    "-f", "testdata/policies/valid/infra.yaml",
    "-f", "testdata/policies/valid/ml-training-oom.yaml",
    "-f", "testdata/policies/valid/ml-queue.yaml",
    "--baseline", "testdata/policies/valid/infra.yaml",
]


def sem(xs):
    """The standard error of the mean of `xs` (0 for a single value)."""
    return statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0


def main():
    rounds, history = int(sys.argv[1]), sys.argv[2]
    builds = dict(a.split("=", 1) for a in sys.argv[3:])
    ns = [int(n) for n in os.environ.get("NS", "4 16").split()]
    scratch = tempfile.mkdtemp(prefix="shards-ab-")
    plan = [*POLICIES, "--history", history]

    def one(name, binary):
        return cpu([binary, "simulate", *plan, "-o", "json"], f"{scratch}/{name}-one.json")[0], 0.0

    def shards(name, binary, n):
        parts = [f"{scratch}/{name}-{n}-{i}.json" for i in range(n)]
        total = sum(cpu([binary, "simulate", *plan, "--shard", f"{i}/{n}", "-o", "partial"], p)[0] for i, p in enumerate(parts))
        merged = f"{scratch}/{name}-{n}-merged.json"
        merge = cpu([binary, "merge", *parts, "-o", "json"], merged)[0]
        if not filecmp.cmp(merged, f"{scratch}/{name}-one.json", shallow=False):
            sys.exit(f"{name}: the merge of {n} shards differs from one process's -o json")
        return total + merge, merge

    sets = {}
    for name, binary in builds.items():
        sets[(name, "json")] = lambda name=name, binary=binary: one(name, binary)
        for n in ns:
            sets[(name, f"N={n}")] = lambda name=name, binary=binary, n=n: shards(name, binary, n)
        one(name, binary)  # the reference file the merges are compared with
    runs = {k: [] for k in sets}
    for _ in range(rounds):
        keys = list(sets)
        random.shuffle(keys)
        for k in keys:
            runs[k].append(sets[k]())
    print(f"{rounds} rounds, {os.cpu_count()} cores, load {open('/proc/loadavg').read().split()[:3]}")
    for name in builds:
        ref = [t for t, _ in runs[(name, "json")]]
        for what in ["json", *(f"N={n}" for n in ns)]:
            t = [x for x, _ in runs[(name, what)]]
            se = sem(t)
            merge = statistics.median(m for _, m in runs[(name, what)])
            # Each round's set against the same round's -o json: a drift of the host's speed
            # between rounds then cancels out, where it stays in the ratio of the means.
            paired = [x / r for x, r in zip(t, ref)]
            pse = sem(paired)
            print(
                f"{name:10s} {what:5s} CPU mean {statistics.mean(t):.3f} ±{se:.3f} s, median {statistics.median(t):.3f} s;"
                f" / -o json: mean {statistics.mean(t) / statistics.mean(ref):.3f}, median {statistics.median(t) / statistics.median(ref):.3f}"
                + (
                    f"; per round: mean {statistics.mean(paired):.3f} ±{pse:.3f}, median {statistics.median(paired):.3f}; merge {merge:.3f} s"
                    if what != "json"
                    else ""
                )
            )


main()
