#!/usr/bin/env bash
# The shard bar (docs/reference/bars.md) by instructions, which a VM's noise does not move:
# callgrind, one worker (RAYON_NUM_THREADS=1), of one process printing `-o json`, of one
# `-o partial` of the whole history (`--shard 0/1`), of each N's shards and of their
# `merge -o json`; each merge is compared with `-o json` byte for byte. The plan is
# `bench-shards.sh`'s (`simulate` with the benchmark's policies and `--baseline`).
#
#   scripts/shards-instructions.sh HISTORY            # N = 4 and 16
#   NS="2 16" scripts/shards-instructions.sh HISTORY
#
# HISTORY: `python3 scripts/gen-histories.py 200000 > h200k.jsonl` (200,000 runs take a few
# minutes under callgrind). RETRYCTL_BIN=PATH measures another build (bench-common.sh).
# Needs valgrind and Python 3. Run from the repository's root.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "error: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: scripts/shards-instructions.sh HISTORY" >&2; exit 2; }
history="$1"
source scripts/bench-common.sh
export RAYON_NUM_THREADS=1
plan=(simulate "${policies[@]}" "${baseline[@]}" --history "$history")

# The instructions callgrind counted for a command (its output to the file $1).
count() {
    local out="$1"
    shift
    valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" "$@" 2>"$dir/valgrind" >"$out" || {
        cat "$dir/valgrind" >&2
        exit 1
    }
    sed -n 's/.*refs: *\([0-9,]*\).*/\1/p' "$dir/valgrind" | tr -d ,
}

machine
one=$(count "$dir/one.json" "$bin" "${plan[@]}" -o json)
echo "one -o json: $one instructions"
whole=$(count "$dir/whole.partial" "$bin" "${plan[@]}" --shard 0/1 -o partial)
echo "one -o partial (--shard 0/1): $whole ($(ratio "$whole" "$one" 3)x)"
for n in ${NS:-4 16}; do
    shards=0
    parts=()
    for ((i = 0; i < n; i++)); do
        shards=$((shards + $(count "$dir/p$n-$i" "$bin" "${plan[@]}" --shard "$i/$n" -o partial)))
        parts+=("$dir/p$n-$i")
    done
    merge=$(count "$dir/merged.json" "$bin" merge "${parts[@]}" -o json)
    cmp -s "$dir/merged.json" "$dir/one.json" || { echo "error: the merge of $n shards differs from -o json" >&2; exit 1; }
    total=$((shards + merge))
    echo "N=$n: shards $shards + merge $merge = $total ($(ratio "$total" "$one" 3)x one -o json); partials $(cat "${parts[@]}" | wc -c) bytes"
done
