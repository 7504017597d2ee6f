#!/usr/bin/env bash
# The bars for bulk `simulate` (docs/reference/bars.md), measured side by side on one machine, and the same
# commands of an earlier commit's build beside this tree's, so that a loss shows in the
# next run rather than in a ratio of the new code to itself:
#   - simulate of a 1,000,000-run JSON Lines history >= 10x faster than `jq -c . FILE`
#     (both cores may be used); the replay's own floor today: 14x by wall, and jq's CPU at
#     least 7.5x simulate's;
#   - single-threaded (pinned to one core) within 1.5x of a typed serde_json parse of the
#     same lines (examples/parse_floor.rs, the parsing floor);
#   - `simulate --baseline` at most 1.6x one replay (1.25x in CPU today);
#   - peak RSS under 64 MiB whatever the file size (the run is repeated on a 3x file).
#
#   scripts/bench-simulate.sh [RUNS] [ROUNDS] [--realistic] [--pending] [--ref COMMIT]
#       RUNS default 1000000, ROUNDS default 3; needs jq, python3, taskset, GNU time
#
# --pending: histories where about one job in seven is still going (its last recorded run a
# retried failure), so the replay works out the runs each has left (docs/estimates.md).
# --ref COMMIT: that commit's release build runs every command too (this tree's is the
# `profiling` build, Cargo.toml), alternating with this
# tree's within each round (built once into target/bench-ref/COMMIT from a detached
# worktree, a few minutes the first time). 58acb77 is the reference BENCHMARKS.md uses: the
# replay before estimates, tune and shards.
#
# Wall and CPU (user + system, every core) are the medians of ROUNDS rounds. The workload
# comes from scripts/gen-histories.py (histories that follow the decisions; --realistic
# adds contradictions like real cluster data).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=1000000
rounds=3
ref=
gen_flags=()
positional=()
while [ $# -gt 0 ]; do
    case "$1" in
        --realistic | --pending) gen_flags+=("$1") ;;
        --ref) ref="$2"; shift ;;
        *) positional+=("$1") ;;
    esac
    shift
done
[ ${#positional[@]} -ge 1 ] && runs="${positional[0]}"
[ ${#positional[@]} -ge 2 ] && rounds="${positional[1]}"
. scripts/bench-common.sh
cargo build --profile profiling --locked --quiet --example parse_floor
floor="$target/profiling/examples/parse_floor"
bins=(new)
declare -A binary=([new]="$bin")
if [ -n "$ref" ]; then
    sha="$(git rev-parse --short "$ref^{commit}")"
    refdir="$target/bench-ref/$sha"
    if [ ! -x "$refdir/retryctl" ]; then
        tree="$dir/ref-tree"
        git worktree add --detach --quiet "$tree" "$sha"
        # Its release profile: a commit before the `profiling` profile has no other, and line
        # tables change no code, so it is the same machine code the profile would build.
        CARGO_TARGET_DIR="$refdir/target" cargo build --release --locked --quiet \
            --manifest-path "$tree/Cargo.toml" --bin retryctl
        cp "$refdir/target/release/retryctl" "$refdir/retryctl"
        git worktree remove --force "$tree"
    fi
    binary[ref]="$refdir/retryctl"
    bins+=(ref)
fi
declare -A wall=() cpu=() rss=()
# The outputs (up to hundreds of MiB) are not kept.
export TIMED_QUIET=1
show() { # key, label
    printf '%-44s %6ss wall (%s) %6ss CPU (%s) %4s MiB\n' "$2" "$(median "${wall[$1]}")" "${wall[$1]% }" \
        "$(median "${cpu[$1]}")" "${cpu[$1]% }" "${rss[$1]}"
}
machine
[ -n "$ref" ] && echo "reference: $sha ($(git log -1 --format=%cs "$sha")); this tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock || echo ' + uncommitted changes')"
for n in "$runs" "$((runs * 3))"; do
    file="$dir/h-$n.jsonl"
    python3 scripts/gen-histories.py "${gen_flags[@]}" "$n" >"$file"
    echo "== $n runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB ${gen_flags[*]}"
    wall=() cpu=() rss=()
    for _ in $(seq "$rounds"); do
        timed jq jq -c . "$file"
        timed floor taskset -c 0 "$floor" "$file"
        for b in "${bins[@]}"; do
            x="${binary[$b]}"
            timed "$b-sim" "$x" simulate "${policies[@]}" --history "$file"
            timed "$b-sim1" taskset -c 0 "$x" simulate "${policies[@]}" --history "$file"
            timed "$b-jsonl" "$x" simulate "${policies[@]}" --history "$file" -o jsonl
            timed "$b-base" "$x" simulate "${policies[@]}" "${baseline[@]}" --history "$file"
        done
    done
    show jq "jq -c . FILE"
    show floor "typed serde parse (1 core, the floor)"
    for b in "${bins[@]}"; do
        show "$b-sim" "$b: simulate (summary, all cores)"
        show "$b-sim1" "$b: simulate (summary, 1 core)"
        show "$b-jsonl" "$b: simulate -o jsonl (all cores)"
        show "$b-base" "$b: simulate --baseline (all cores)"
    done
    for b in "${bins[@]}"; do
        w="$(median "${wall[$b-sim]}" 3)" c="$(median "${cpu[$b-sim]}" 3)"
        echo "$b ratios: jq / simulate = $(ratio "$(median "${wall[jq]}" 3)" "$w") wall (bar >= 10; >= 14 today)," \
            "$(ratio "$(median "${cpu[jq]}" 3)" "$c") CPU (>= 7.5 today);" \
            "simulate 1 core / floor = $(ratio "$(median "${wall[$b-sim1]}" 3)" "$(median "${wall[floor]}" 3)") (bar <= 1.5);" \
            "--baseline / simulate = $(ratio "$(median "${wall[$b-base]}" 3)" "$w") wall, $(ratio "$(median "${cpu[$b-base]}" 3)" "$c") CPU (bar <= 1.6; <= 1.25 CPU today)"
    done
    if [ -n "$ref" ]; then
        for k in sim sim1 jsonl base; do
            echo "new / ref, $k: $(ratio "$(median "${cpu[new-$k]}" 3)" "$(median "${cpu[ref-$k]}" 3)") CPU," \
                "$(ratio "$(median "${wall[new-$k]}" 3)" "$(median "${wall[ref-$k]}" 3)") wall"
        done
    fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
