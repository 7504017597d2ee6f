#!/usr/bin/env bash
# How the executor's categorizer's cost grows with its rules (docs/categorizer.md: a config
# holds at most 1,000 categories and 4,000 rules, and within that its cost grows at most
# linearly in rules): `simulate` of one history with a config of 1,000 rules and one of
# 4,000 (1,000 categories of one rule, then of four), side by side on one machine. The bar:
# 4,000 rules cost at most 4x what 1,000 do.
#
#   scripts/bench-categorizer-scale.sh [JOBS] [ROUNDS]   # default 10000 3; needs python3, GNU time
#   RETRYCTL_BIN=target/debug/retryctl scripts/bench-categorizer-scale.sh 1000 3
#
# The rules are what operators write: a message regex with its literal (`error code E17 in
# module [a-z]+`, a fourth of them case-insensitive), an exit code, a `containerName`. Each
# job's failed run matches one rule somewhere in the config, or none (a fifth), so that most
# runs try hundreds of rules before theirs. Wall and CPU (user + system) are the medians of
# ROUNDS rounds, the two configs alternating within a round so that load hits them alike.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-10000}"
rounds="${2:-3}"
. scripts/bench-common.sh
python3 - "$dir" "$jobs" <<'PY'
import json, random, sys
out, jobs = sys.argv[1], int(sys.argv[2])
def config(per):
    lines = ["errorCategories:", "  enabled: true", "  defaultCategory: uncategorized", "  categories:"]
    for i in range(1000):
        lines += [f"    - name: cat-{i}", "      action: Delete", "      rules:"]
        for r in range(per):
            k = i * per + r
            if k % 10 == 9:
                lines.append(f"        - onExitCodes: {{operator: In, values: [{1000 + k}]}}")
            elif k % 4 == 3:
                lines.append(f"        - onTerminationMessage: {{pattern: \"(?i)fatal: code f{k} at [0-9]+\"}}")
            else:
                scope = "          containerName: main\n" if k % 7 == 0 else ""
                lines.append(f"        - onTerminationMessage: {{pattern: \"error code E{k} in module [a-z]+\"}}")
                if scope:
                    lines.append(scope.rstrip("\n"))
    return "\n".join(lines) + "\n"
for rules, per in [(1000, 1), (4000, 4)]:
    open(f"{out}/rules-{rules}.yaml", "w").write(config(per))
rng = random.Random(7)
with open(f"{out}/history.jsonl", "w") as f:
    for j in range(jobs):
        k = rng.randrange(5000)  # past 4,000 (or 1,000): no rule matches, the default
        message = f"error code E{k} in module io" if k % 4 != 3 else f"FATAL: CODE F{k} at 12"
        run = {"node": f"node-{j % 50}", "runFor": "60s",
               "containers": [{"name": "main", "exitCode": 1, "message": message}]}
        f.write(json.dumps({"job": {"id": f"job-{j}"}, "runs": [run, {"outcome": "succeeded"}]}) + "\n")
PY
policy="$dir/policy.yaml"
printf 'apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  defaultAction: Retry\n' >"$policy"
for rules in 1000 4000; do "$bin" validate -f "$dir/rules-$rules.yaml" >/dev/null; done
machine
echo "== $jobs jobs; configs of 1,000 categories: 1,000 rules, then 4,000; binary $bin"
declare -A wall=() cpu=() rss=()
for _ in $(seq "$rounds"); do
    for rules in 1000 4000; do
        timed "$rules" "$bin" simulate -f "$policy" --history "$dir/history.jsonl" --categorizer "$dir/rules-$rules.yaml"
    done
done
for rules in 1000 4000; do
    printf '%5s rules %7ss wall (%s) %7ss CPU (%s) peak %s MiB\n' "$rules" "$(median "${wall[$rules]}")" \
        "${wall[$rules]% }" "$(median "${cpu[$rules]}")" "${cpu[$rules]% }" "${rss[$rules]}"
done
echo "4,000 rules against 1,000: $(ratio "$(median "${wall[4000]}")" "$(median "${wall[1000]}")")x wall," \
    "$(ratio "$(median "${cpu[4000]}")" "$(median "${cpu[1000]}")")x CPU (bar <= 4: linear)"
