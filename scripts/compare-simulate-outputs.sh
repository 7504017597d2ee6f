#!/usr/bin/env bash
# Byte identity of `simulate` between two builds, for refactors that must not change output:
# every combination below is run with both binaries, and stdout, stderr and the exit code of
# each are compared with `cmp`.
#
#   scripts/compare-simulate-outputs.sh BEFORE_BIN AFTER_BIN [RUNS]   # RUNS: default 200000
#
# Inputs: two RUNS-run JSON Lines files from scripts/gen-histories.py (plain and --realistic),
# a small file of every kind of bad line (invalid JSON, an unknown outcome, a queue that is not
# among the documents, a job without queue, a failed expectation), testdata/histories (a
# directory of YAML) and two single YAML histories; × 3 policy sets (the test policies, the
# bench's, infra with --retry-policy) × 5 modes (plain, --baseline, --engine upstream,
# --strict, --baseline with --baseline-engine upstream) × table/json/yaml/jsonl × 1 and 2
# workers (the big files only); then the upstream test policies × their histories, --engine
# upstream (plain and --strict) and --baseline both ways. Prints each difference and a count.
set -uo pipefail
cd "$(dirname "$0")/.."
before="$1"; after="$2"; runs="${3:-200000}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
python3 scripts/gen-histories.py "$runs" >"$dir/plain.jsonl"
python3 scripts/gen-histories.py --realistic "$runs" >"$dir/realistic.jsonl"
cat >"$dir/mixed.jsonl" <<'LINES'
{"job":{"id":"a","queue":"ml-queue"},"runs":[{"conditions":["Preempted"],"runFor":"10m"},{"conditions":["Preempted"]},{"outcome":"succeeded","runFor":"1h"}]}
{"job":{"id":"nq"},"runs":[{"conditions":["Preempted"]},{"outcome":"succeeded"}]}
not json
{"job":{"id":"mq","queue":"nowhere"},"runs":[{"containers":[{"name":"main","exitCode":137,"reason":"OOMKilled"}]}]}
{"job":{"id":"bad"},"runs":[{"outcome":"exploded"}]}
{"job":{"id":"cat","queue":"ml-queue"},"runs":[{"category":"cuda_error","subcategory":"transient"},{"category":"cuda_error"},{"conditions":["Evicted"]}],"expect":{"final":"Succeeded"}}
LINES
valid=testdata/policies/valid
policy_sets=("-f $valid -f testdata/histories/policies"
             "-f $valid/infra.yaml -f $valid/ml-training-oom.yaml -f $valid/ml-queue.yaml"
             "-f $valid/infra.yaml --retry-policy infra")
modes=("" "--baseline $valid/infra.yaml" "--engine upstream" "--strict"
       "--baseline $valid/infra.yaml $valid/ml-training-oom.yaml --baseline-engine upstream")
up=testdata/histories/upstream
up_modes=("--engine upstream" "--engine upstream --strict"
          "--baseline $up/policies --baseline-engine upstream"
          "--engine upstream --baseline $up/policies --baseline-engine design")
n=0; differ=0
one() { # workers, args...
    local w="$1"; shift
    local k
    for k in before after; do
        local bin; [ "$k" = before ] && bin="$before" || bin="$after"
        RAYON_NUM_THREADS="$w" NO_COLOR=1 "$bin" simulate "$@" >"$dir/$k.out" 2>"$dir/$k.err"
        echo $? >"$dir/$k.code"
    done
    for part in out err code; do
        n=$((n + 1))
        if ! cmp -s "$dir/before.$part" "$dir/after.$part"; then
            differ=$((differ + 1))
            echo "differs ($part): RAYON_NUM_THREADS=$w simulate $*"
        fi
    done
}
for input in "$dir/plain.jsonl" "$dir/realistic.jsonl" "$dir/mixed.jsonl" testdata/histories \
    testdata/histories/design-composition.yaml testdata/histories/lease-returned-then-cancelled.yaml; do
    for p in "${policy_sets[@]}"; do
        for m in "${modes[@]}"; do
            for fmt in table json yaml jsonl; do
                for w in 1 2; do
                    case "$input" in *plain.jsonl|*realistic.jsonl) ;; *) [ "$w" = 2 ] && continue ;; esac
                    # shellcheck disable=SC2086
                    one "$w" $p $m --history "$input" -o "$fmt"
                done
            done
        done
    done
done
for input in "$up" "$dir/realistic.jsonl" "$dir/mixed.jsonl"; do
    for m in "${up_modes[@]}"; do
        for fmt in table json yaml jsonl; do
            # shellcheck disable=SC2086
            one 2 -f "$up/policies" $m --history "$input" -o "$fmt"
        done
    done
done
echo "$n comparisons (stdout, stderr, exit code), $differ differ"
[ "$differ" = 0 ]
