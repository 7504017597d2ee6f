#!/usr/bin/env bash
# docs/reference/suggest.md's speed: `suggest` over a 1,000,000-run history (one pass to
# learn, one to compare) within 2x one `simulate --baseline` of the same history in CPU
# (user + system), and peak RSS under 128 MiB whatever the size (repeated on a 3x file).
#
#   scripts/bench-suggest.sh [RUNS] [ROUNDS]      RUNS default 1000000, ROUNDS default 3
#
# Needs python3 and GNU time. The workload is scripts/gen-histories.py's (--pending: one job
# in seven still going; --messages: every failed container but an OOM-killed one writes a
# termination message as real clusters do, tracebacks, NCCL and CUDA errors, numbers, hex
# addresses and UUIDs, from 3,000 templates: about 2,300 signatures at 1M runs, which is
# what suggest's learning costs on a real week). Both commands print JSON (stdout discarded): the proposal's
# comparison is the what-if `simulate --baseline -o json` prints, so the ratio is the cost
# of learning.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
rounds="${2:-3}"
. scripts/bench-common.sh
export TIMED_QUIET=1
# suggest's baseline: the simulate benchmark's candidate policies (what the cluster runs).
base_files=()
for p in "${policies[@]}"; do [ "$p" != -f ] && base_files+=("$p"); done
machine
echo "tree: $(tree_commit)"
for n in "$runs" "$((runs * 3))"; do
    file="$dir/h-$n.jsonl"
    python3 scripts/gen-histories.py --pending --messages "$n" >"$file"
    echo "== $n runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
    declare -A wall=() cpu=() rss=()
    for _ in $(seq "$rounds"); do
        timed simulate "$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file" -o json
        timed suggest "$bin" suggest --history "$file" --baseline "${base_files[@]}" -o json
    done
    medians simulate suggest
    echo "suggest / simulate --baseline, CPU: $(ratio "$(median "${cpu[suggest]}")" "$(median "${cpu[simulate]}")")x (bar: 2)"
    unset wall cpu rss
done
