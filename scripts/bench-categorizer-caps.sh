#!/usr/bin/env bash
# A categorizer at retryctl's caps costs one job a bounded replay (docs/categorizer.md):
# 1,000 categories × 4 rules, each an `onTerminationMessage` or `onPodError` pattern of
# `L{k}\pL{6}` (rule n: L the n/100-th of a-z, A-N, k = n mod 100 + 1: 4,000 distinct
# patterns, ~260 kB, each within the size bound a rule's regex has, docs/categorizer.md), none
# with a literal the prefilter could scan for, and one job whose failed run matches none of
# them, so that every rule's regex runs. Measured: peak
# RSS and wall time of `simulate --engine upstream --categorizer` of that one job, and of
# `suggest --categorizer` on it. The bar: each under 256 MiB and 10 s, release build.
#
#   scripts/bench-categorizer-caps.sh [ROUNDS]   # default 3; needs python3, GNU time
#   RETRYCTL_BIN=/tmp/retryctl-03831a9 scripts/bench-categorizer-caps.sh 1   # an earlier build
#
# Unlike the other bench scripts this one builds `--release --locked` (what BENCHMARKS.md
# reports for this bar) unless RETRYCTL_BIN names a binary. Wall is the median of ROUNDS
# rounds; peak RSS the largest seen.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
target="${CARGO_TARGET_DIR:-target}"
if [ -z "${RETRYCTL_BIN:-}" ]; then
    cargo build --release --locked --quiet --bin retryctl
    export RETRYCTL_BIN="$target/release/retryctl"
fi
. scripts/bench-common.sh
python3 - "$dir" <<'PY'
import json, sys
out = sys.argv[1]
letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
lines = ["errorCategories:", "  enabled: true", "  defaultCategory: uncategorized", "  categories:"]
for i in range(1000):
    lines += [f"    - name: cat-{i}", "      action: Delete", "      rules:"]
    for r in range(4):
        n = i * 4 + r
        field = "onTerminationMessage" if r % 2 == 0 else "onPodError"
        pattern = f"{letters[n // 100]}{{{n % 100 + 1}}}\\pL{{6}}"
        lines.append(f"        - {field}: {{pattern: '{pattern}'}}")
open(f"{out}/categorizer.yaml", "w").write("\n".join(lines) + "\n")
# One job: its failed run's message and pod error hold letters and a run of x, but never the
# run a rule asks for followed by six letters, so no rule matches and every one is tried.
run = {"node": "node-1", "runFor": "60s", "podError": "xxxx: pull failed",
       "containers": [{"name": "main", "exitCode": 1, "message": "xxx failed: Fehler über Ωmega"}]}
job = {"job": {"id": "job-1"}, "runs": [run, {"outcome": "succeeded"}]}
open(f"{out}/history.jsonl", "w").write(json.dumps(job) + "\n")
open(f"{out}/policy.yaml", "w").write(
    "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 1\n"
    "defaultAction: Fail\nrules:\n  - {action: Retry, onCategory: uncategorized}\n")
PY
config="$dir/categorizer.yaml"
"$bin" validate -f "$config" >/dev/null
machine
echo "== one job; categorizer of 1,000 categories x 4 rules ($(wc -c <"$config") bytes); binary $bin"
declare -A wall=() cpu=() rss=() peak=([simulate]=0 [suggest]=0)
# `timed` keeps a failed command's figures; one that fails here measures nothing, so say so.
checked() {
    local verb="$1"
    shift
    timed "$verb" "$@"
    if grep -q "exited with non-zero status" "$dir/time"; then
        echo "$verb failed:" >&2
        cat "$dir/time" "$dir/stderr" >&2
        exit 1
    fi
    [ "${rss[$verb]}" -gt "${peak[$verb]}" ] && peak[$verb]="${rss[$verb]}"
    return 0
}
for _ in $(seq "$rounds"); do
    checked simulate "$bin" simulate -f "$dir/policy.yaml" --history "$dir/history.jsonl" \
        --engine upstream --categorizer "$config"
    checked suggest "$bin" suggest --history "$dir/history.jsonl" --engine upstream \
        --categorizer "$config"
done
for verb in simulate suggest; do
    printf '%-8s %6ss wall (%s) %6ss CPU (%s) peak %s MiB\n' "$verb" "$(median "${wall[$verb]}")" \
        "${wall[$verb]% }" "$(median "${cpu[$verb]}")" "${cpu[$verb]% }" "${peak[$verb]}"
done
