#!/usr/bin/env bash
# A sharded suggest over a history whose every failure has its own signature
# (docs/past-one-machine.md, "suggest: the shards learn, the merge compares"): JOBS jobs
# (default 1,000,000), each one failed run with a termination message no other job has,
# then a run that succeeds. One process keeps 10,000 signatures and counts the rest as
# `other`; a shard must stay within one process's memory (peak RSS under 128 MiB, as
# docs/reference/suggest.md's bar) and write no line `merge` refuses (256 MiB), and the
# merge must print one process's bytes.
#
#   scripts/bench-suggest-signatures.sh [JOBS] [SHARDS]      SHARDS default 2
#
# Prints, for one process, each shard and the merge (with `-o json`, then `-o table`): wall
# and CPU seconds, peak RSS (GNU time's maximum resident set), exit status; each partial's
# size, lines and longest line; whether the merge's stdout is one process's. RETRYCTL_BIN=PATH measures that build instead (an
# earlier commit's, side by side). Needs python3 and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-1000000}"
shards="${2:-2}"
. scripts/bench-common.sh
machine
echo "build: $bin"
echo "tree: $(tree_commit)"
file="$dir/h.jsonl"
# Each job's message is a word of letters g-z (no digit, no hex word: the template keeps it
# whole), its own; one job in ten also fails once with one of 50 recurring messages, so that
# the signatures kept have runs in every shard.
python3 - "$jobs" >"$file" <<'EOF'
import sys
n = int(sys.argv[1])
letters = "ghijklmnopqrstuvwxyz"
def word(i):
    w = ""
    while True:
        w += letters[i % 20]
        i //= 20
        if i == 0:
            return w
out = sys.stdout
for i in range(n):
    node = f"node-{i % 200}"
    runs = []
    if i % 10 == 0:
        runs.append('{"node":"%s","runFor":"90s","containers":[{"name":"main","exitCode":2,"message":"loader failed: shard %s unavailable"}]}'
                    % (node, word(i % 50)))
    runs.append('{"node":"%s","runFor":"60s","containers":[{"name":"main","exitCode":1,"message":"ValueError: no handler named %s"}]}'
                % (node, word(i)))
    runs.append('{"node":"%s","runFor":"300s"}' % node)
    out.write('{"job":{"id":"job-%07d","queue":"ml-queue","resources":{"gpu":1,"cpu":4}},"runs":[%s]}\n'
              % (i, ",".join(runs)))
EOF
echo "== $jobs jobs, $(du -m "$file" | cut -f1) MiB, $shards shards"
base=(--baseline testdata/policies/valid/infra.yaml)
declare -A wall=() cpu=() rss=()
codes=()
report() {
    local name="$1" code="$2"
    printf '%-8s %7ss wall %7ss CPU %5s MiB peak RSS, exit %s\n' "$name" "${wall[$name]% }" "${cpu[$name]% }" \
        "${rss[$name]}" "$code"
}
status() { head -n 1 "$dir/time" | sed -n 's/^Command exited with non-zero status //p' | grep . || echo 0; }
timed one "$bin" suggest --history "$file" "${base[@]}" -o json
report one "$(status)"
timed one-table "$bin" suggest --history "$file" "${base[@]}" -o table
report one-table "$(status)"
parts=()
for ((i = 0; i < shards; i++)); do
    timed "shard$i" "$bin" suggest --history "$file" "${base[@]}" --shard "$i/$shards" -o partial
    report "shard$i" "$(status)"
    parts+=("$dir/out-shard$i")
done
for p in "${parts[@]}"; do
    printf '%-8s partial %5s MiB, %s lines, longest %s bytes\n' "$(basename "$p" | sed 's/^out-//')" \
        "$(du -m "$p" | cut -f1)" "$(wc -l <"$p")" "$(wc -L <"$p")"
done
for f in json table; do
    name=merge; one=one
    [ "$f" = table ] && name=merge-table && one=one-table
    timed "$name" "$bin" merge "${parts[@]}" -o "$f"
    code="$(status)"
    report "$name" "$code"
    [ "$code" = 0 ] || sed -n 1,3p "$dir/stderr"
    if cmp -s "$dir/out-$one" "$dir/out-$name"; then
        echo "merge -o $f: one process's bytes"
    else
        echo "merge -o $f: NOT one process's bytes"
    fi
done
