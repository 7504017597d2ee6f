#!/usr/bin/env python3
"""CPU time (user + system, the kernel's accounting of each process) of commands run in
turn, in a shuffled order each round, so that a host whose speed drifts slows them alike:
the mean of each with its standard error, median and least.

    scripts/cpu-ab.py ROUNDS 'NAME=command|arg|arg…' 'NAME=…' …

Arguments of a command are separated by `|`; its stdout goes to a scratch file (as a run
writing a file would), its stderr is dropped. BENCHMARKS.md uses it where a difference of a
few percent must be told from this VM's noise (a third from one run to the next).
"""
import os
import random
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cputime import cpu  # noqa: E402


def main():
    rounds = int(sys.argv[1])
    configs = dict(a.split("=", 1) for a in sys.argv[2:])
    configs = {k: [x for x in v.split("|") if x] for k, v in configs.items()}
    out = os.path.join(tempfile.mkdtemp(prefix="cpu-ab-"), "out")
    runs = {k: [] for k in configs}
    for _ in range(rounds):
        names = list(configs)
        random.shuffle(names)
        for k in names:
            runs[k].append(cpu(configs[k], out))
    for k, v in runs.items():
        t = [x[0] for x in v]
        se = statistics.stdev(t) / len(t) ** 0.5 if len(t) > 1 else 0.0
        print(f"{k:12s} mean {statistics.mean(t):.4f} ±{se:.4f}  median {statistics.median(t):.4f}  least {min(t):.4f}"
              f"  (user {statistics.mean(x[1] for x in v):.4f}, system {statistics.mean(x[2] for x in v):.4f})")


main()
