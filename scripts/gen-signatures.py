#!/usr/bin/env python3
"""Writes a JSON Lines history with S distinct `suggest` signatures (docs/reference/suggest.md
"Signatures"), for the memory of `suggest -o json|yaml` at many signatures
(scripts/bench-suggest-output.sh). Deterministic: the same arguments give the same file.

    scripts/gen-signatures.py 10001 > /tmp/signatures.jsonl
    scripts/gen-signatures.py --rules 50 --jobs 20 --few 2 10001 > /tmp/signatures.jsonl

Each signature is `exit:1@main "Error<code>: ..."`: its termination message begins with a word
no other signature has. The word is spelled in the letters g to z, so that the template keeps
it (a run of digits would become `<n>` and a hex word `<hex>`, and every message one
signature). Each job has one failed run, then a run on another node that succeeds or fails
again. The first RULES signatures (50 by default: a policy holds at most 100 rules) have JOBS
jobs each (20, `--min-trials`' default), in which the retry succeeds in a share that varies
with the signature, so that the proposal holds Retry and Fail rules; every other signature has
FEW jobs (2), too few trials for a rule of its own, and is listed with its counts all the same.
"""
import argparse
import json
import sys

LETTERS = "ghijklmnopqrstuvwxyz"


def code(i):
    """`i` in base 20, in the letters g to z, at least four of them."""
    out = ""
    while True:
        out = LETTERS[i % 20] + out
        i //= 20
        if i == 0 and len(out) >= 4:
            return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("signatures", type=int)
    p.add_argument("--rules", type=int, default=50)
    p.add_argument("--jobs", type=int, default=20)
    p.add_argument("--few", type=int, default=2)
    a = p.parse_args()
    out = sys.stdout
    for s in range(a.signatures):
        message = f"Error{code(s)}: worker could not open the shard store"
        jobs = a.jobs if s < a.rules else a.few
        # 0 to 19 successes in 20 (scaled to the jobs): a futile share gives a Fail rule.
        succeeded = (s % 20) * jobs // 20
        for k in range(jobs):
            failed = {"node": f"node-{(s + k) % 200}", "runFor": "60s",
                      "containers": [{"name": "main", "exitCode": 1, "message": message}]}
            last = {"node": f"node-{(s + k + 1) % 200}", "runFor": "60s"}
            if k < succeeded:
                last["outcome"] = "succeeded"
            else:
                last["containers"] = [{"name": "main", "exitCode": 1, "message": message}]
            record = {"job": {"id": f"j{s}-{k}", "queue": "ml-queue"}, "runs": [failed, last]}
            out.write(json.dumps(record, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
