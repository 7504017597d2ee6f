#!/usr/bin/env bash
# The estimates' bar (docs/reference/bars.md): the cost of the estimates on 1,000,000 runs against the plain what-if,
# measured side by side (target: within 1.3x):
#   - `--backtest-at` (docs/estimates.md) against the same `simulate --baseline` without it;
#   - runs-left estimation (docs/estimates.md, always on in a what-if) through `simulate --baseline`
#     against one replay: the what-if's `--baseline <= 1.6x` bar, 1.23-1.27x before runs left
#     were estimated.
#
#   scripts/bench-estimates.sh [RUNS] [ROUNDS]   # default 1000000 3; needs python3, GNU time
#
# CPU is user + system time (both cores are used); each figure is the median of ROUNDS
# rounds, the commands alternating within a round so that load hits them alike.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
rounds="${2:-3}"
. scripts/bench-common.sh
file="$dir/h.jsonl"
# Jobs submitted every 2 s from 2026-11-01: a cut on the 4th leaves about 60% to fit.
python3 scripts/gen-histories.py --submitted "$runs" >"$file"
at=2026-11-04T00:00:00Z
machine
echo "== $runs runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
declare -A cpu rss
names=(replay whatif backtest whatif_json backtest_json)
run() { # name, command...
    local name="$1"; shift
    /usr/bin/time -f "%U %S %M" -o "$dir/time" "$@" >/dev/null 2>"$dir/stderr" || true
    read -r u s k < <(tail -n 1 "$dir/time")
    cpu[$name]+="$(python3 -c "print(round($u + $s, 2))") "
    rss[$name]="$((k / 1024))"
}
for _ in $(seq "$rounds"); do
    run replay "$bin" simulate "${policies[@]}" --history "$file"
    run whatif "$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file"
    run backtest "$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file" --backtest-at "$at"
    run whatif_json "$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file" -o json
    run backtest_json "$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file" --backtest-at "$at" -o json
done
declare -A m
for n in "${names[@]}"; do
    m[$n]=$(median "${cpu[$n]}" 3)
    printf '%-14s %7ss CPU (median of: %s)  peak %s MiB\n' "$n" "${m[$n]}" "${cpu[$n]% }" "${rss[$n]}"
done
echo "ratios: --backtest-at / what-if = $(ratio "${m[backtest]}" "${m[whatif]}") (table), $(ratio "${m[backtest_json]}" "${m[whatif_json]}") (json) (bar <= 1.3);" \
     "what-if (runs left included) / one replay = $(ratio "${m[whatif]}" "${m[replay]}") (bar <= 1.6; 1.23-1.27 before runs left)"
