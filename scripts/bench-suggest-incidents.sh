#!/usr/bin/env bash
# docs/reference/suggest.md's speed with incidents: `suggest` with incident windows looked for
# (the default, `--incidents auto`) within 1.1x `suggest --incidents off` of the same history
# in CPU (user + system), side by side in interleaved rounds (each round runs both, in a
# shuffled order), with peak RSS.
#
#   scripts/bench-suggest-incidents.sh [RUNS] [ROUNDS]    RUNS default 1000000, ROUNDS default 10
#   RETRYCTL_BIN=PATH scripts/bench-suggest-incidents.sh …  another build
#
# Two histories of scripts/bench-suggest.sh's workload (gen-histories.py --pending --messages),
# with submission times (--submitted --every=20: a job every 20 seconds, 53 days at 1M runs,
# so that every failed run has a time to count): `spread`, as generated (its failures come at
# an even rate: no window is found, and detection costs its counting alone), and `outage`, the
# same with 2,000 more jobs whose 4 runs all fail with one message within 2.5 hours on its
# third day (a window is found: the copy is read again and its jobs' runs left out).
# At a job every 2 seconds (a week) the span's first and last hours, when jobs have started
# failing but their retries have not yet come, weigh the mean down enough that every steady
# hour between is found an incident: `spread` then left 95% of its failed runs out.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
rounds="${2:-10}"
. scripts/bench-common.sh
export TIMED_QUIET=1
base_files=()
for p in "${policies[@]}"; do [ "$p" != -f ] && base_files+=("$p"); done
machine
echo "tree: $(tree_commit); binary: $bin"
spread="$dir/spread.jsonl"
outage="$dir/outage.jsonl"
python3 scripts/gen-histories.py --pending --messages --submitted --every=20 "$runs" >"$spread"
cp "$spread" "$outage"
python3 - "$outage" <<'PY'
import datetime, json, sys
start = datetime.datetime(2026, 11, 3, 8, 0, tzinfo=datetime.timezone.utc)
with open(sys.argv[1], "a") as f:
    for j in range(2000):
        at = start + datetime.timedelta(seconds=4.5 * j)
        run = {"node": f"node-{j % 200}", "runFor": "60s",
               "containers": [{"name": "main", "exitCode": 1, "message": "rpc error: code = Unavailable desc = registry unavailable"}]}
        f.write(json.dumps({"job": {"id": f"outage-{j}", "queue": "ml-queue",
                                    "submittedAt": at.strftime("%Y-%m-%dT%H:%M:%SZ")},
                            "runs": [run] * 4}) + "\n")
PY
for h in spread outage; do
    file="$dir/$h.jsonl"
    echo "== $h: $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
    "$bin" suggest --history "$file" --baseline "${base_files[@]}" -o json 2>/dev/null \
        | python3 -c "import json,sys; s=json.load(sys.stdin)['suggest']; print('windows:', len(s.get('incidents', [])), '; left out:', s.get('incidentsLeftOut'))" || true
    declare -A wall=() cpu=() rss=()
    for _ in $(seq "$rounds"); do
        if [ $((RANDOM % 2)) = 0 ]; then
            timed auto "$bin" suggest --history "$file" --baseline "${base_files[@]}" -o json
            timed off "$bin" suggest --history "$file" --baseline "${base_files[@]}" -o json --incidents off
        else
            timed off "$bin" suggest --history "$file" --baseline "${base_files[@]}" -o json --incidents off
            timed auto "$bin" suggest --history "$file" --baseline "${base_files[@]}" -o json
        fi
    done
    medians auto off
    mean() { python3 -c "import statistics, sys; print(f'{statistics.mean(map(float, sys.argv[1:])):.3f}')" $1; }
    echo "auto / off, CPU: $(ratio "$(mean "${cpu[auto]}")" "$(mean "${cpu[off]}")" 3)x by the means, $(ratio "$(median "${cpu[auto]}")" "$(median "${cpu[off]}")" 3)x by the medians (bar: 1.1)"
    unset wall cpu rss
done
