#!/usr/bin/env bash
# Regenerates `startup.order`: the functions a `retryctl` process runs on its way to a
# `validate`, `--version` or `--help` result, which build.rs asks the linker (lld) to place
# first in the text. A process then faults in a few adjacent pages of code instead of ~45
# pages scattered over 9.8 MB (SPEC §7 start-up bar; BENCHMARKS.md "Start-up").
#
#   scripts/gen-startup-order.sh
#
# Run it after a toolchain or dependency update, or a change to the start-up path: symbols
# are matched by their mangled names, so a stale list only costs speed (the linker ignores
# names it does not find). `scripts/bench-validate.sh` prints how many still match.
# Needs valgrind (Debian: apt-get install valgrind) and binutils' nm.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "error: valgrind not found; install it (apt-get install valgrind)" >&2; exit 2; }
cargo build --release --locked --quiet
bin="${CARGO_TARGET_DIR:-target}/release/retryctl"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n=0
trace() {
  n=$((n + 1))
  # Exit codes do not matter here: error paths are start-up paths too.
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$tmp/cg.$n" "$bin" "$@" >/dev/null 2>&1 || true
}
trace validate -f testdata/policies/valid/ml-training.yaml
trace validate -f testdata/policies/valid
trace validate -f testdata/policies/invalid/action-typo.yaml
trace validate -f testdata/policies/valid/ml-training.yaml -o json
trace validate -f does-not-exist.yaml
trace --version
trace --help
trace validate --help
# Every function callgrind saw (a name is given once per file, as `fn=(id) name` or
# `cfn=(id) name`), kept if the binary defines it as code.
grep -h -E '^c?fn=\([0-9]+\) ' "$tmp"/cg.* | sed -E 's/^c?fn=\([0-9]+\) //; s/'"'"'[0-9]+$//' | sort -u >"$tmp/ran"
nm --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u >"$tmp/defined"
comm -12 "$tmp/ran" "$tmp/defined" >startup.order
echo "startup.order: $(wc -l <startup.order) functions" >&2
