#!/usr/bin/env bash
# The bar (docs/reference/bars.md): `retryctl validate -f <one policy file>` within 3x the wall
# time of spawning /bin/true (it was 2x, bought with start-up tricks that were not worth
# keeping; src/startup.rs, BENCHMARKS.md "Start-up"). Median of many runs (hyperfine, no shell in between: -N), the
# `profiling` build (release with line tables, Cargo.toml).
#
#   scripts/bench-validate.sh [POLICY_FILE] [RUNS]
#
# Then runs hostile inputs against the limits docs/policies.md sets (binary, empty, 50 MB, 8 MB of nodes, deep
# nesting, alias bomb; generated into a tempdir) once each and prints exit code, wall time
# and peak RSS. Needs hyperfine (Debian: apt-get install hyperfine), Python 3 and GNU time.
# Exits 1 when the ratio is above 3, or a hostile input does not exit 3 under 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
file="${1:-testdata/policies/valid/ml-training.yaml}"
runs="${2:-500}"
command -v hyperfine >/dev/null || { echo "error: hyperfine not found; install it (apt-get install hyperfine)" >&2; exit 2; }
cargo build --profile profiling --locked --quiet
bin="${CARGO_TARGET_DIR:-target}/profiling/retryctl"
"$bin" validate -f "$file" >/dev/null   # must be valid, or we would time the error path
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
hyperfine -N --warmup 50 --runs "$runs" --export-json "$out" \
  "/bin/true" \
  "$bin validate -f $file" >&2
set +e
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
t, v = (x["median"] * 1e3 for x in r)
ratio = v / t
tmin, vmin = (x["min"] * 1e3 for x in r)
print(f"/bin/true median: {t:.3f} ms (min {tmin:.3f} ms)")
print(f"validate  median: {v:.3f} ms (min {vmin:.3f} ms)")
print(f"ratio: {ratio:.2f}x (bar: 3x, docs/reference/bars.md)")
sys.exit(0 if ratio <= 3 else 1)
PY
status=$?
set -e

# Hostile inputs: exit code, wall time and peak RSS of one run each (GNU time). Our own bar:
# exit 3 and peak RSS under 64 MiB whatever the input.
command -v /usr/bin/time >/dev/null || { echo "(no /usr/bin/time: skipping the hostile-input table)"; exit $status; }
dir="$(mktemp -d)"
trap 'rm -f "$out"; rm -rf "$dir"' EXIT
python3 - "$dir" <<'PY'
import os, sys
d = sys.argv[1]
def w(name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
w("binary.yaml", bytes(range(256)) * 16)
w("empty.yaml", b"")
with open(os.path.join(d, "50mb.yaml"), "wb") as f:
    line = b"- " + b"x" * 1021 + b"\n"
    for _ in range(50 * 1024):
        f.write(line)
w("8mb-flat.yaml", b"a: [" + b"1," * 4_000_000 + b"1]\n")
w("deep-flow.yaml", b"[" * 100_000)
w("deep-block.yaml", "".join("  " * i + "a:\n" for i in range(200)).encode())
bomb = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
for i in range(1, 10):
    bomb += f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]\n"
w("alias-bomb.yaml", bomb.encode())
PY
printf '%-16s %5s %9s %10s\n' input exit wall_s peak_rss
for f in binary empty 50mb 8mb-flat deep-flow deep-block alias-bomb; do
  set +e
  /usr/bin/time -f '%e %M' -o "$dir/time" "$bin" validate -f "$dir/$f.yaml" >/dev/null 2>&1
  code=$?
  set -e
  # GNU time puts "Command exited with non-zero status 3" first; the numbers are last.
  read -r wall rss < <(tail -n 1 "$dir/time")
  printf '%-16s %5s %9s %7s KiB\n' "$f" "$code" "$wall" "$rss"
  if [ "$code" != 3 ] || [ "$rss" -gt $((64 * 1024)) ]; then status=1; fi
done
exit $status
