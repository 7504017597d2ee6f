#!/usr/bin/env bash
# `suggest -o json|yaml` at many signatures: peak RSS within 128 MiB (the table beside them, for
# what learning alone holds). The history is scripts/gen-signatures.py's: SIGNATURES distinct
# signatures (10,001 by default), each job one failed run whose message begins with a word no
# other signature has, 50 of them with enough trials for a rule of their own.
#
#   scripts/bench-suggest-output.sh [SIGNATURES] [ROUNDS]     defaults 10001 and 3
#   RETRYCTL_BIN=/tmp/before/retryctl scripts/bench-suggest-output.sh    an earlier build
#
# Needs python3 and GNU time. Prints the median wall time and the largest peak RSS of ROUNDS
# runs of each format, and the bytes each printed (stdout discarded after counting).
set -euo pipefail
cd "$(dirname "$0")/.."
signatures="${1:-10001}"
rounds="${2:-3}"
. scripts/bench-common.sh
machine
echo "tree: $(tree_commit); binary: $bin"
file="$dir/signatures-$signatures.jsonl"
python3 scripts/gen-signatures.py "$signatures" >"$file"
echo "== $signatures signatures, $(wc -l <"$file") jobs, $(du -k "$file" | cut -f1) KiB"
declare -A wall=() cpu=() rss=() peak=()
for _ in $(seq "$rounds"); do
    for o in table json yaml; do
        timed "$o" "$bin" suggest --history "$file" -o "$o"
        # The largest of the rounds (`timed` keeps the last).
        [ "${rss[$o]}" -gt "${peak[$o]:-0}" ] && peak[$o]="${rss[$o]}"
    done
done
for o in table json yaml; do
    printf '%-6s %6ss wall (%s) %5s MiB peak RSS %10s bytes out\n' "$o" "$(median "${wall[$o]}")" "${wall[$o]% }" \
        "${peak[$o]}" "$(wc -c <"$dir/out-$o")"
done
echo "bar: -o json and -o yaml within 128 MiB"
