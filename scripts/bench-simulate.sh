#!/usr/bin/env bash
# SPEC §7 bar: `simulate` of a 1,000,000-run JSON Lines history must be faster than
# `jq -c . FILE >/dev/null` on the same file, with peak RSS under 64 MiB whatever the size.
#
#   scripts/bench-simulate.sh [RUNS]      # default 1000000; needs jq and /usr/bin/time
#
# Prints wall time and peak RSS of jq and of simulate (table summary; and -o jsonl to
# /dev/null), then the same for a file 3x larger, to show memory does not grow with size.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
cargo build --release --locked --quiet
bin=target/release/retryctl
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
measure() { # label, command...
    local label="$1"; shift
    /usr/bin/time -f "%e %M" -o "$dir/time" "$@" >/dev/null 2>"$dir/stderr" || true
    read -r secs kib <"$dir/time"
    printf '%-44s %8ss %8s MiB\n' "$label" "$secs" "$((kib / 1024))"
}
for n in "$runs" "$((runs * 3))"; do
    file="$dir/h-$n.jsonl"
    python3 scripts/gen-histories.py "$n" >"$file"
    echo "== $n runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
    measure "jq -c . FILE" jq -c . "$file"
    measure "retryctl simulate (summary)" "$bin" simulate -f testdata/policies/valid --history "$file"
    measure "retryctl simulate -o jsonl" "$bin" simulate -f testdata/policies/valid --history "$file" -o jsonl
done
