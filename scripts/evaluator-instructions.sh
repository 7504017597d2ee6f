#!/usr/bin/env bash
# Instructions per decision of the evaluator bench's cases (benches/evaluator.rs), counted by
# callgrind: exact whatever the machine's load, where criterion's nanoseconds on a shared
# machine move by a third from one round to the next (BENCHMARKS.md "evaluator").
#
#   scripts/evaluator-instructions.sh [BENCH_BINARY] [CASE...]
#
# BENCH_BINARY: the criterion binary (default: built here with `cargo bench --no-run`); pass
# another build's copy to compare two commits side by side. Each case is profiled twice, for a
# short and a longer time (`--profile-time`); the difference of `evaluate`'s inclusive
# instructions, divided by the difference of its calls, is the steady state per decision: the
# one-time set-up (the list's DFA, built by the first decision that needs it) cancels out.
# Needs valgrind and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "error: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
bin="${1:-}"
if [ -z "$bin" ]; then
  bin=$(cargo bench --locked --features bench --bench evaluator --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "evaluator" and m.get("executable"):
        print(m["executable"])')
fi
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(last_rule_matches first_rule_matches no_match_default_fail regex_rules_no_match
  regex_rules_last_matches named_exit_rules_last_matches)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The calls to `…::evaluate` in a callgrind profile and their inclusive instructions.
calls() {
  python3 - "$1" <<'EOF'
import re, sys
names, cfn, pending, calls, incl = {}, None, None, 0, 0
def name(tok):
    m = re.match(r'\((\d+)\)(?: (.*))?', tok)
    if not m:
        return tok
    if m.group(2) is not None:
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), '')
for line in open(sys.argv[1]):
    line = line.rstrip('\n')
    if line.startswith('fn='):
        name(line[3:]); cfn = None
    elif line.startswith('cfn='):
        cfn = name(line[4:])
    elif line.startswith('calls='):
        pending = int(line.split()[0][6:])
    elif pending is not None:
        if cfn is not None and cfn.endswith('::evaluate'):
            calls += pending
            incl += int(line.split()[1])
        pending = None
print(calls, incl)
EOF
}
for c in "${cases[@]}"; do
  # The catalog case builds its DFA under valgrind for seconds: longer profiles.
  short=2 long=5
  [ "$c" = regex_rules_last_matches ] && short=4 long=10
  for t in $short $long; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/$t.out" "$bin" --bench --profile-time "$t" \
      "evaluate_3x20/$c\$" >/dev/null 2>&1
  done
  read -r c1 i1 < <(calls "$tmp/$short.out")
  read -r c2 i2 < <(calls "$tmp/$long.out")
  if [ "$c2" -le "$c1" ]; then
    echo "$c: the longer profile made no more decisions ($c1, $c2): a loaded machine; run again" >&2
    continue
  fi
  awk -v c="$c" -v c1="$c1" -v i1="$i1" -v c2="$c2" -v i2="$i2" \
    'BEGIN { printf "%-32s %8.1f instructions per decision (%d decisions)\n", c, (i2 - i1) / (c2 - c1), c2 - c1 }'
done
