#!/usr/bin/env bash
# docs/reference/suggest.md's speed on a history with no reasons: `suggest` over about
# 3,000,000 runs shaped like a public GPU cluster's trace (scripts/gen-trace.py --copies 670:
# attempts only, every failure `unknown`, so the proposal is the policy's learned default)
# within 2x one `simulate --baseline` of its proposal on the same history, in CPU (user +
# system), with peak RSS.
#
#   scripts/bench-suggest-trace.sh [COPIES] [ROUNDS]     COPIES default 670, ROUNDS default 3
#   RETRYCTL_BIN=PATH scripts/bench-suggest-trace.sh …   an earlier build, side by side
#
# Neither side has a policy of today's: suggest compares its proposal with no policy (the
# legacy path fails every failed run), and simulate does the same with a baseline that fails
# every run (`defaultAction: Fail`, no rule: the legacy path's decisions, through a policy).
# Both print JSON (stdout discarded). `--skip-invalid` is not needed: every line reads.
set -euo pipefail
cd "$(dirname "$0")/.."
copies="${1:-670}"
rounds="${2:-3}"
. scripts/bench-common.sh
export TIMED_QUIET=1
machine
echo "tree: $(tree_commit); binary: $bin"
file="$dir/trace.jsonl"
python3 scripts/gen-trace.py --copies "$copies" >"$file"
echo "== $copies copies: $(wc -l <"$file") jobs, $(python3 -c "import json,sys; print(sum(len(json.loads(l)['runs']) for l in open(sys.argv[1])))" "$file") runs, $(du -m "$file" | cut -f1) MiB"
cat >"$dir/fail.yaml" <<'YAML'
apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: today
spec:
  defaultAction: Fail
  rules: []
YAML
"$bin" suggest --history "$file" -o policy >"$dir/suggested.yaml" 2>/dev/null || true
grep -E '^  (retryLimit|defaultAction):' "$dir/suggested.yaml" | tr -d ' ' | paste -sd' ' | sed 's/^/proposal: /'
declare -A wall=() cpu=() rss=()
for _ in $(seq "$rounds"); do
    timed simulate "$bin" simulate -f "$dir/suggested.yaml" --baseline "$dir/fail.yaml" --history "$file" -o json
    timed suggest "$bin" suggest --history "$file" -o json
done
medians simulate suggest
echo "suggest / simulate --baseline, CPU: $(ratio "$(median "${cpu[suggest]}")" "$(median "${cpu[simulate]}")")x (bar: 2)"
