#!/usr/bin/env python3
"""Incident detection's memory (docs/reference/suggest.md "Incidents"): N jobs, each failing
once with a termination message of its own (words, no digits: a signature a job), every
failure at midnight of one of DAYS days, then a success on another node.

    scripts/gen-midnight.py DAYS N > history.jsonl

On 2 days the windows are held to the span's mean and both midnights are incidents holding
every failed run; on 200 days each midnight's 00:00 window is unusual against its hour's
mean (the other starts of that hour hold none), and every job of a midnight is on one node.
"""
import datetime
import json
import sys

days, n = int(sys.argv[1]), int(sys.argv[2])
words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]
start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
out = sys.stdout
for i in range(n):
    x, said = i, []
    for _ in range(6):
        said.append(words[x % 16])
        x //= 16
    at = (start + datetime.timedelta(days=i % days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    runs = [{"node": f"node-{i % 50}", "runFor": "30s",
             "containers": [{"name": "main", "exitCode": 1, "message": "failed: " + " ".join(said)}]},
            {"node": f"node-{(i + 1) % 50}", "runFor": "30s", "outcome": "succeeded"}]
    out.write(json.dumps({"job": {"id": f"j-{i}", "queue": "ml", "submittedAt": at}, "runs": runs}) + "\n")
