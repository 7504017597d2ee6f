#!/usr/bin/env bash
# suggest's speed when its proposal changes the cluster's categorizer (docs/reference/suggest.md
# "Speed"): it learns from one queue and compares every queue, so that a two-queue week costs
# it at most 3x the CPU of one `simulate --baseline` of its proposal on the same week.
#
#   scripts/bench-suggest-cluster.sh [RUNS] [ROUNDS]    RUNS default 1000000, ROUNDS default 5
#
# The week: scripts/gen-two-queue-week.py (the route's week and the pull back-offs of
# tests/integration/suggest_cluster.rs, repeated). Both commands print JSON (discarded); suggest
# exits 1 there (its verdict is `reject`: the split loses batch's jobs), a run like any other.
# Needs python3 and GNU time; RETRYCTL_BIN=PATH measures that build (bench-common.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
rounds="${2:-5}"
. scripts/bench-common.sh
export TIMED_QUIET=1
machine
python3 scripts/gen-two-queue-week.py "$runs" "$dir"
week="$dir/week.jsonl" current="$dir/current/"
"$bin" suggest --history "$week" --queue ml --baseline "$current" -o policy >"$dir/suggested.yaml" 2>/dev/null || [ $? -eq 1 ]
grep -q 'queue batch' "$dir/suggested.yaml" || { echo "the proposal does not change the categorizer for batch" >&2; exit 1; }
declare -A wall=() cpu=() rss=()
for _ in $(seq "$rounds"); do
    timed simulate "$bin" simulate -f "$dir/suggested.yaml" --baseline "$current" --history "$week" -o json
    timed suggest "$bin" suggest --history "$week" --queue ml --baseline "$current" -o json
done
medians simulate suggest
echo "suggest / simulate --baseline, CPU: $(ratio "$(median "${cpu[suggest]}")" "$(median "${cpu[simulate]}")")x (bar: 3)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
