#!/usr/bin/env bash
# SPEC §7 bar: `retryctl validate -f <one policy file>` within 5x the wall time of spawning
# /bin/true. Median of many runs (hyperfine, no shell in between: -N), release build.
#
#   scripts/bench-validate.sh [POLICY_FILE] [RUNS]
#
# Needs hyperfine (Debian: apt-get install hyperfine) and Python 3 for the summary.
# Prints both medians and the ratio; exits 1 when the ratio is above 5.
set -euo pipefail
cd "$(dirname "$0")/.."
file="${1:-testdata/policies/valid/ml-training.yaml}"
runs="${2:-500}"
command -v hyperfine >/dev/null || { echo "error: hyperfine not found; install it (apt-get install hyperfine)" >&2; exit 2; }
cargo build --release --locked --quiet
bin="target/release/retryctl"
"$bin" validate -f "$file" >/dev/null   # must be valid, or we would time the error path
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
hyperfine -N --warmup 50 --runs "$runs" --export-json "$out" \
  "/bin/true" \
  "$bin validate -f $file" >&2
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
t, v = (x["median"] * 1e3 for x in r)
ratio = v / t
print(f"/bin/true median: {t:.3f} ms")
print(f"validate  median: {v:.3f} ms")
print(f"ratio: {ratio:.2f}x (bar: 5x)")
sys.exit(0 if ratio <= 5 else 1)
PY
