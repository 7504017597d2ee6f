#!/usr/bin/env bash
# The bars for `tune` (docs/reference/bars.md, docs/tune.md), measured side by side on one machine:
#   - one pass over the history whatever the number of candidates (decode once);
#   - 100 candidates varying limits and actions over 1,000,000 runs within 5x one
#     `simulate --baseline` of the same history; 1,000 candidates within 25x;
#   - peak RSS under 128 MiB whatever the history's size (repeated on a 3x history).
#
#   scripts/bench-tune.sh [RUNS] [ROUNDS]   # default 1000000 3; needs python3, GNU time
#
# Wall and CPU (user + system; both cores are used) are the medians of ROUNDS rounds, the
# commands alternating within a round so that load hits them alike.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
rounds="${2:-3}"
. scripts/bench-common.sh
# 10 x 5 x 2 = 100 candidates: a global limit, a rule's limit, a rule's action.
vary100=(--vary 'infra:spec.retryLimit=1..10' --vary 'ml-training-oom:spec.rules[0].retryLimit=0..4'
         --vary 'ml-training-oom:spec.rules[0].action=Retry,Fail')
# x 10 = 1,000: the other policy's global limit too.
vary1000=("${vary100[@]}" --vary 'ml-training-oom:spec.retryLimit=1..10')
machine
for n in "$runs" "$((runs * 3))"; do
    file="$dir/h-$n.jsonl"
    python3 scripts/gen-histories.py "$n" >"$file"
    echo "== $n runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
    declare -A wall=() cpu=() rss=()
    for _ in $(seq "$rounds"); do
        timed whatif "$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file"
        timed tune100 "$bin" tune "${policies[@]}" "${baseline[@]}" --history "$file" "${vary100[@]}"
        timed tune1000 "$bin" tune "${policies[@]}" "${baseline[@]}" --history "$file" "${vary1000[@]}"
    done
    head -n 1 "$dir/out-tune100"
    head -n 1 "$dir/out-tune1000"
    for name in whatif tune100 tune1000; do
        printf '%-9s %6ss wall (%s) %6ss CPU (%s) peak %s MiB\n' "$name" "$(median "${wall[$name]}")" \
            "${wall[$name]% }" "$(median "${cpu[$name]}")" "${cpu[$name]% }" "${rss[$name]}"
    done
    w=$(median "${wall[whatif]}") c=$(median "${cpu[whatif]}")
    echo "ratios against simulate --baseline: 100 candidates $(ratio "$(median "${wall[tune100]}")" "$w")x wall," \
        "$(ratio "$(median "${cpu[tune100]}")" "$c")x CPU (bar <= 5); 1,000 candidates" \
        "$(ratio "$(median "${wall[tune1000]}")" "$w")x wall, $(ratio "$(median "${cpu[tune1000]}")" "$c")x CPU (bar <= 25)"
done
