#!/usr/bin/env bash
# The README's two commands on a fresh clone (docs/reference/bars.md "a fresh clone"; BENCHMARKS.md
# "Build time"): clones REPO at COMMIT into DIR (removed first), then runs the quick start's two
# commands exactly as written, each under /usr/bin/time, the first command's first line of output
# stamped as it arrives, `--timings` added to both (cargo's reports copied into OUT).
#
#   scripts/bench-fresh-clone.sh REPO COMMIT DIR OUT
#
# Run it on a quiet machine: it measures wall time. The crates are taken from the registry
# cache when they are there (as on a machine that has built Rust before).
set -u
repo=$1; commit=$2; dir=$3; out=$4
mkdir -p "$out"
rm -rf "$dir" && git clone -q "$repo" "$dir" && cd "$dir" && git checkout -q "$commit"
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) commit $commit" >"$out/log"
t0=$(date +%s.%N)
/usr/bin/time -f "run-cpu user %U sys %S wall %e" -a -o "$out/log" \
    cargo run --locked --timings -- simulate -f testdata/policies/valid \
    --history testdata/histories/design-composition.yaml 2>"$out/run.err" |
    while IFS= read -r line; do
        [ -z "${first:-}" ] && { first=1; echo "first-line $(echo "$(date +%s.%N) - $t0" | bc)" >>"$out/log"; }
        echo "$line" >>"$out/run.out"
    done
t1=$(date +%s.%N)
echo "run-total $(echo "$t1 - $t0" | bc)" >>"$out/log"
cp target/cargo-timings/cargo-timing.html "$out/run-timing.html" 2>/dev/null
/usr/bin/time -f "test-cpu user %U sys %S wall %e" -a -o "$out/log" cargo test --locked --timings >"$out/test.out" 2>"$out/test.err"
rc=$?
t2=$(date +%s.%N)
echo "test-total $(echo "$t2 - $t1" | bc) rc $rc" >>"$out/log"
echo "both $(echo "$t2 - $t0" | bc)" >>"$out/log"
cp target/cargo-timings/cargo-timing.html "$out/test-timing.html" 2>/dev/null
echo "end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/log"
cat "$out/log"
