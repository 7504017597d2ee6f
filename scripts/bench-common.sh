# Sourced by the bench scripts (bench-simulate.sh, bench-tune.sh, bench-shards.sh,
# bench-estimates.sh): the `profiling` build (Cargo.toml: release with line tables, for perf and
# callgrind; or `$RETRYCTL_BIN`), a scratch directory removed on exit, the policies
# of the `simulate` benchmark, and the arithmetic they print.
# Run from the repository's root.
# RETRYCTL_BIN=PATH measures that build instead (an earlier commit's, side by side).
target="${CARGO_TARGET_DIR:-target}"
if [ -n "${RETRYCTL_BIN:-}" ]; then
    bin="$RETRYCTL_BIN"
else
    cargo build --profile profiling --locked --quiet --bin retryctl
    bin="$target/profiling/retryctl"
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
policies=(-f testdata/policies/valid/infra.yaml -f testdata/policies/valid/ml-training-oom.yaml
          -f testdata/policies/valid/ml-queue.yaml)
# The old side: infra.yaml alone (no queue document: OOM kills are no longer retried).
baseline=(--baseline testdata/policies/valid/infra.yaml)
# The median of the numbers in $1 (separated by spaces), to $2 places (two by default).
median() { python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[2:])):.{sys.argv[1]}f}')" "${2:-2}" $1; }
# $1 / $2 to $3 places, two by default ("n/a" when $2 is 0).
ratio() { python3 -c "import sys; a, b, p = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); print(f'{a / b:.{p}f}' if b else 'n/a')" "$1" "$2" "${3:-2}"; }
machine() { echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
# Runs a command (after NAME) under GNU time: adds its wall and CPU (user + system) seconds
# to wall[NAME] and cpu[NAME], and its peak RSS in MiB to rss[NAME] (associative arrays the
# caller declares: `declare -A wall=() cpu=() rss=()`). Its stdout goes to $dir/out-NAME, or
# to /dev/null when TIMED_QUIET is set (outputs of hundreds of MiB).
timed() {
    local name="$1" out
    shift
    out="$dir/out-$name"
    [ -n "${TIMED_QUIET:-}" ] && out=/dev/null
    /usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$@" >"$out" 2>"$dir/stderr" || true
    # GNU time writes "Command exited with non-zero status N" first when it does.
    local e u s k
    read -r e u s k < <(tail -n 1 "$dir/time")
    wall[$name]+="$e "
    cpu[$name]+="$(python3 -c "print(round($u + $s, 2))") "
    rss[$name]="$((k / 1024))"
}
# The tree measured: its commit, and whether src or the lock differ from it.
tree_commit() { echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock || echo ' + uncommitted changes')"; }
# A line per NAME that `timed` ran: the median wall and CPU seconds with every round's, and
# the peak RSS in MiB.
medians() {
    local k
    for k in "$@"; do
        printf '%-10s %6ss wall (%s) %6ss CPU (%s) %4s MiB\n' "$k" "$(median "${wall[$k]}")" "${wall[$k]% }" \
            "$(median "${cpu[$k]}")" "${cpu[$k]% }" "${rss[$k]}"
    done
}
