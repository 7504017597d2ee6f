#!/usr/bin/env python3
"""Writes testdata/route/week.jsonl: queue `ml`'s week of 2026-11-15 to 2026-11-22 as
`retryctl history --lookout-db` exports it, for the README's route ("On your cluster: from last
week's failures to a policy", run by tests/integration/route.rs). Deterministic: the same
input gives the same file.

    cargo build --locked
    scripts/gen-route-week.py testdata/suggest/planted.jsonl > testdata/route/week.jsonl

(`$RETRYCTL` names another build of retryctl than target/debug/retryctl.)

The jobs and their runs are the planted history's (testdata/suggest/planted.jsonl: the
signatures, their trials and outcomes, the nodes, the run times), made into what Lookout
holds and gives back on today's Armada:

- ids are lower-case ULIDs of the submission time, as Armada's; submissions are spread over
  the week, in a seeded random order of the planted jobs; each job asks for 4 CPUs, 1 GPU
  and 16, 32 or 64 GiB of memory;
- each run waits in the queue (`queuedFor`) 5 s to 3 min;
- a failed container is what the executor's composed error text gives back: named, with
  its reason (`Error`, or `OOMKilled`) and termination message; a container that exited 0
  is not in that text, so the init container `setup`'s runs hold `setup` alone (`init:
  true`, from the debug document's `pod.initContainers`);
- an image that cannot be pulled is a pod stuck pending that the executor's pod checks fail:
  `executorPath: stuckPod`, and as `podError` the executor's text, `Unable to start pod -
  encountered an unrecoverable problem.` and the first event check's match on the kubelet's
  event (upstream's shipped config: `check-0`, `Failed to pull image.* failed to pull and
  unpack image`, Fail), built from upstream's own format strings
  (contract/executor/formats.txt); the kubelet's events are the debug document's;
- every other failed run is a failed pod (`executorPath: failedPod`), a preempted run or a
  lease expiry Armada's own (`unclassified`);
- each failed run the executor classifies carries the category it gave it (every executor
  error is terminal, so Lookout keeps each): testdata/route/current/executor.yaml's, worked
  out here by its rules on the executor's paths (a stuck pod's text for `onPodError`; a
  failed pod's containers, every category being `Delete`, so its composed text too);
  Armada's own `internal/lease-expired` stays on every lease expiry. The hint the executor
  appends is not in the file: `history --categorizer current/executor.yaml` takes it off.

Then the week is made one that today's policy explains (docs/what-if.md "Does the baseline
explain the record?"): the draft is replayed by retryctl's upstream engine under
testdata/route/current/ (its policies and its executor config), and each job keeps the runs that
replay starts. A planted retry today's Armada never makes (a preempted run: upstream never
retries a preemption) is not in the record, as it is not in Lookout's. No run is written by
hand: what the replay starts is what the record holds.

Each job ends as its last run does (`job.state`: `succeeded`, `cancelled`, else `failed`), as
Lookout holds it and `history` writes it for a job whose record is complete.

Durations are written as Go prints them without zero units (`1h`, `11m40s`), as `history`
writes them.
"""
import datetime
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CURRENT = ROOT / "testdata" / "route" / "current"

WEEK = datetime.datetime(2026, 11, 15, tzinfo=datetime.timezone.utc)
CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
GIB = 1024 ** 3


def ulid(at, rng):
    ms = int(at.timestamp() * 1000)
    head = "".join(CROCKFORD[(ms >> (5 * i)) & 31] for i in reversed(range(10)))
    tail = rng.getrandbits(80)
    return head + "".join(CROCKFORD[(tail >> (5 * i)) & 31] for i in reversed(range(16)))


def seconds(text):
    assert text.endswith("s"), text
    return int(text[:-1])


def go(secs):
    """A whole number of seconds as Go's time.Duration prints it, without zero units."""
    if secs == 0:
        return "0s"
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)


def formats():
    """contract/executor/formats.txt: `PATH:LINE` -> upstream's Go literal, unquoted."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contract", "executor", "formats.txt")
    out = {}
    with open(path) as f:
        lines = f.read().split("\n")
    for k, line in enumerate(lines):
        if line.startswith("# "):
            literal = lines[k + 1]
            try:
                # One Go double-quoted literal: the escapes the file uses are JSON's too.
                literal = json.loads(literal)
            except json.JSONDecodeError:
                continue  # a raw string, a concatenation, an SQL fragment: not a format
            out[line[2:].split(" ")[0]] = literal
    return out


FORMATS = formats()


def go_sprintf(at, *args):
    """Upstream's literal at `at` formatted as Go's fmt does for %s, %d and %q (a plain name)."""
    args = list(args)

    def verb(m):
        arg = args.pop(0)
        return json.dumps(arg) if m.group(1) == "q" else str(arg)

    return re.sub(r"%([sdqv])", verb, FORMATS[at])


def stuck_pod_text(image):
    """The executor's text of a pod stuck on an image that does not exist (createStuckPodMessage,
    not retryable, of the first event check's message)."""
    event = f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and unpack image "{image}": not found'
    checks = go_sprintf("internal/executor/podchecks/event_checks.go:102", "check-0", event)
    return go_sprintf("internal/executor/service/pod_issue_handler.go:793", checks), event


def failed_reason(run):
    """util.ExtractPodFailedReason of a failed pod: its containers' lines, as the executor
    composes them."""
    return "".join(
        go_sprintf(
            "internal/executor/util/pod_status.go:31",
            c["name"],
            c["exitCode"],
            c.get("reason", "Error"),
            c.get("message", ""),
        )
        for c in run.get("containers", [])
        if c["exitCode"] != 0
    )


def category(run):
    """The category (and subcategory) testdata/route/current/executor.yaml gives a failed run on
    its executor path: rules in order, first match; a stuck pod's `onPodError` reads its text, a
    failed pod's (every category `Delete`: the Delete-action check's) its composed text."""
    failed = [c for c in run.get("containers", []) if c["exitCode"] != 0]
    text = run.get("podError", "") if run.get("executorPath") == "stuckPod" else failed_reason(run)
    if any(c.get("reason") == "OOMKilled" for c in failed):
        return "oom", "kernel"
    if any(c.get("name") == "main" and c["exitCode"] == 42 for c in failed):
        return "app-42", None
    if any(c.get("name") == "main" and re.search("(?i)cuda.*error", c.get("message", "")) for c in failed):
        return "infrastructure", "cuda"
    if text and re.search("not found|NotFound", text):
        return "infrastructure", "image-pull"
    return None, None


def container(c):
    out = {"name": c["name"]}
    if c.get("init"):
        out["init"] = True
    out["exitCode"] = c["exitCode"]
    out["reason"] = c.get("reason", "Error")
    if c.get("message"):
        out["message"] = c["message"]
    return out


def run_of(planted, rng):
    run = {"node": planted["node"], "queuedFor": go(rng.randrange(5, 181))}
    if seconds(planted["runFor"]):
        run["runFor"] = go(seconds(planted["runFor"]))
    if planted.get("conditions"):
        run["conditions"] = planted["conditions"]
    failed = [container(c) for c in planted.get("containers", []) if c["exitCode"] != 0]
    # The executor's composed text: regular containers, then init containers.
    failed.sort(key=lambda c: c.get("init", False))
    if failed:
        run["containers"] = failed
    if planted.get("category"):
        run["category"] = planted["category"]
        run["subcategory"] = planted["subcategory"]
    if planted.get("outcome"):
        run["outcome"] = planted["outcome"]
    elif planted.get("conditions") or planted.get("category") == "internal":
        run["executorPath"] = "unclassified"
    elif planted.get("podError"):
        image = planted["podError"].split('"')[1]
        text, event = stuck_pod_text(image)
        run["executorPath"] = "stuckPod"
        run["podError"] = text
        run["events"] = [
            {"type": "Normal", "reason": "Scheduled", "message": f"Successfully assigned ml/armada-job to {planted['node']}"},
            {"type": "Normal", "reason": "Pulling", "message": f'Pulling image "{image}"'},
            {"type": "Warning", "reason": "Failed", "message": event},
        ]
    else:
        run["executorPath"] = "failedPod"
    return run


def main():
    rng = random.Random(20261115)
    with open(sys.argv[1]) as f:
        planted = [json.loads(line) for line in f]
    span = 7 * 24 * 3600 - 6 * 3600
    offsets = sorted(rng.sample(range(span), len(planted)))
    order = list(range(len(planted)))
    rng.shuffle(order)
    jobs = []
    for offset, k in zip(offsets, order):
        p = planted[k]
        at = WEEK + datetime.timedelta(seconds=offset)
        runs = [run_of(r, rng) for r in p["runs"]]
        jobs.append({
            "apiVersion": "armadaproject.io/v1",
            "kind": "FailureHistory",
            "job": {
                "id": ulid(at, rng),
                "queue": "ml",
                "memory": str(rng.choice([16, 32, 64]) * GIB),
                "submittedAt": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "resources": {"cpu": "4", "gpu": "1"},
            },
            "runs": runs,
        })
    jobs.sort(key=lambda j: j["job"]["id"])
    started = replayed_runs(jobs)
    for j in jobs:
        j["runs"] = j["runs"][: started[j["job"]["id"]]]
        # Lookout's `job.state` of the job, as `history` writes it for a complete record: its
        # last run's end (a preempted job is `failed`).
        last = j["runs"][-1].get("outcome")
        j["job"]["state"] = last if last in ("succeeded", "cancelled") else "failed"
        for i, run in enumerate(j["runs"]):
            if run.get("executorPath") in ("stuckPod", "failedPod") and "category" not in run:
                cat, sub = category(run)
                if cat:
                    run["category"] = cat
                    if sub:
                        run["subcategory"] = sub
            # The field order `history` writes.
            j["runs"][i] = {key: run[key] for key in order_of(run)}
        print(json.dumps(j, separators=(",", ":"), ensure_ascii=False))


def replayed_runs(jobs):
    """How many of each job's runs the upstream engine starts under testdata/route/current/."""
    retryctl = os.environ.get("RETRYCTL", str(ROOT / "target" / "debug" / "retryctl"))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as draft:
        for j in jobs:
            draft.write(json.dumps(j) + "\n")
        draft.flush()
        out = subprocess.run(
            [retryctl, "simulate", "-f", str(CURRENT / "policies.yaml"), "-f", str(CURRENT / "queues.yaml"),
             "--categorizer", str(CURRENT / "executor.yaml"), "--engine", "upstream",
             "--history", draft.name, "-o", "jsonl"],
            check=True, capture_output=True, text=True,
        ).stdout
    return {r["job"]: len(r["runs"]) for r in map(json.loads, out.splitlines())}


def order_of(run):
    keys = ["node", "queuedFor", "runFor", "conditions", "containers", "category", "subcategory", "outcome", "executorPath", "podError", "events"]
    assert set(run) <= set(keys), run
    return [k for k in keys if k in run]


if __name__ == "__main__":
    main()
