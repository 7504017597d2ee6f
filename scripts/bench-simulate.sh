#!/usr/bin/env bash
# SPEC §7 bars for bulk `simulate`, measured side by side on one machine:
#   - simulate of a 1,000,000-run JSON Lines history >= 10x faster than `jq -c . FILE`
#     (both cores may be used);
#   - single-threaded (pinned to one core) within 1.5x of a typed serde_json parse of the
#     same lines (examples/parse_floor.rs, the parsing floor);
#   - `simulate --baseline` at most 1.6x one replay;
#   - peak RSS under 64 MiB whatever the file size (the run is repeated on a 3x file).
#
#   scripts/bench-simulate.sh [RUNS] [--realistic]   # default 1000000; needs jq, python3,
#                                                   # taskset and GNU time (/usr/bin/time)
#
# Prints wall time, user time and peak RSS of each, then the ratios. The workload comes
# from scripts/gen-histories.py (histories that follow the decisions; --realistic adds
# contradictions like real cluster data).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=1000000
gen_flags=()
for a in "$@"; do
    case "$a" in
        --realistic) gen_flags+=(--realistic) ;;
        *) runs="$a" ;;
    esac
done
. scripts/bench-common.sh
cargo build --release --locked --quiet --example parse_floor
floor="$target/release/examples/parse_floor"
declare -A wall
measure() { # key, label, command...
    local key="$1" label="$2"; shift 2
    /usr/bin/time -f "%e %U %M" -o "$dir/time" "$@" >/dev/null 2>"$dir/stderr" || true
    # GNU time writes "Command exited with non-zero status N" first when it does.
    read -r secs user kib < <(tail -n 1 "$dir/time")
    wall[$key]="$secs"
    printf '%-48s %7ss wall %7ss user %6s MiB\n' "$label" "$secs" "$user" "$((kib / 1024))"
}
machine
for n in "$runs" "$((runs * 3))"; do
    file="$dir/h-$n.jsonl"
    python3 scripts/gen-histories.py "${gen_flags[@]}" "$n" >"$file"
    echo "== $n runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
    measure jq "jq -c . FILE" jq -c . "$file"
    measure floor "typed serde parse (1 core, the floor)" taskset -c 0 "$floor" "$file"
    measure sim "simulate (summary, all cores)" "$bin" simulate "${policies[@]}" --history "$file"
    measure sim1 "simulate (summary, 1 core)" taskset -c 0 "$bin" simulate "${policies[@]}" --history "$file"
    measure jsonl "simulate -o jsonl (all cores)" "$bin" simulate "${policies[@]}" --history "$file" -o jsonl
    measure base "simulate --baseline (all cores)" "$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file"
    echo "ratios: jq / simulate = $(ratio "${wall[jq]}" "${wall[sim]}") (bar >= 10)," \
        "simulate 1 core / floor = $(ratio "${wall[sim1]}" "${wall[floor]}") (bar <= 1.5)," \
        "--baseline / simulate = $(ratio "${wall[base]}" "${wall[sim]}") (bar <= 1.6)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
