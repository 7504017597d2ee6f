#!/usr/bin/env bash
# The bars for shards (docs/reference/bars.md), measured side by side on one machine:
#   - N=4 shards of a 1,000,000-run history, run one after the other, cost at most 1.2x the
#     single process in total CPU (user + system), for `simulate --baseline` and for `tune`;
#   - `merge` is linear in the partials' size (the run is repeated on a 3x history);
#   - (a shard from Lookout reads ~1/N of the rows: scripts/bench-history.sh shards N.)
#
#   scripts/bench-shards.sh [RUNS]     # default 1000000; ROUNDS=3 by default; needs python3
#
# Each shard writes `-o partial` as it would for a merge; the single process prints the
# table (what a person runs) and, as references, JSON (which, like a partial, lists every
# changed job) and the partial of one shard of one (`--shard 0/1 -o partial`: the same work
# unsplit, so that the ratio is what splitting costs). CPU is user + system from the
# kernel's accounting of each process, in microseconds (GNU time prints hundredths: four
# shards summed carried +-0.04 s of rounding, 5% of the total); each figure is the median
# of ROUNDS runs.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
. scripts/bench-common.sh
sweep=(--vary 'ml-training-oom:spec.retryLimit=1..5' --vary 'infra:spec.retryLimit=1,3')
rounds="${ROUNDS:-3}"
cpu() { # out-file, command... → prints "cpu_seconds wall_seconds peak_MiB"
    local out="$1"; shift
    python3 - "$out" "$dir/stderr" "$@" <<'PY'
# posix_spawn and wait4: the command's own rusage. (subprocess's child closes every
# descriptor up to the limit before exec, 0.05 s of CPU charged to the command here.)
import os, sys, time
out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
o, e = os.open(out, flags, 0o644), os.open(err, flags, 0o644)
start = time.monotonic()
pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, o, 1), (os.POSIX_SPAWN_DUP2, e, 2)])
_, _, r = os.wait4(pid, 0)
wall = time.monotonic() - start
print(f"{r.ru_utime + r.ru_stime:.4f} {wall:.2f} {r.ru_maxrss // 1024}")
PY
}
machine
for n in "$runs" "$((runs * 3))"; do
    file="$dir/h-$n.jsonl"
    python3 scripts/gen-histories.py "$n" >"$file"
    echo "== $n runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
    for what in plan tune; do
        if [ "$what" = plan ]; then
            cmd=("$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file")
        else
            cmd=("$bin" tune "${policies[@]}" "${baseline[@]}" --history "$file" "${sweep[@]}")
        fi
        ones=() jsons=() wholes=() totals=()
        for _ in $(seq "$rounds"); do
            read -r one_cpu one_wall one_rss < <(cpu "$dir/one.txt" "${cmd[@]}")
            read -r json_cpu _ _ < <(cpu "$dir/one.json" "${cmd[@]}" -o json)
            read -r whole_cpu _ _ < <(cpu "$dir/whole.json" "${cmd[@]}" --shard 0/1 -o partial)
            total=0 parts=()
            for i in 0 1 2 3; do
                read -r c _ rss < <(cpu "$dir/$what-$i.json" "${cmd[@]}" --shard "$i/4" -o partial)
                total=$(python3 -c "print(f'{$total + $c:.4f}')")
                parts+=("$dir/$what-$i.json")
            done
            ones+=("$one_cpu") jsons+=("$json_cpu") wholes+=("$whole_cpu") totals+=("$total")
        done
        one_cpu=$(median "${ones[*]}" 3) json_cpu=$(median "${jsons[*]}" 3) total=$(median "${totals[*]}" 3)
        whole_cpu=$(median "${wholes[*]}" 3)
        bytes=$(cat "${parts[@]}" | wc -c)
        read -r merge_cpu merge_wall merge_rss < <(cpu "$dir/merged.txt" "$bin" merge "${parts[@]}")
        cmp -s "$dir/merged.txt" "$dir/one.txt" || echo "!! merge differs from one process ($what)"
        printf '%-5s one process: %5ss CPU (%ss wall, %s MiB; -o json %ss; --shard 0/1 %ss)   4 shards: %5ss CPU in all, last shard %s MiB   partials %s MiB   merge %ss CPU (%s MiB)\n' \
            "$what" "$one_cpu" "$one_wall" "$one_rss" "$json_cpu" "$whole_cpu" "$total" "$rss" "$((bytes / 1048576))" "$merge_cpu" "$merge_rss"
        echo "      ratios: 4 shards / one process = $(ratio "$total" "$one_cpu") (bar <= 1.2), / one process -o json = $(ratio "$total" "$json_cpu"), / one shard of 1 = $(ratio "$total" "$whole_cpu"); merge CPU per partial MiB = $(python3 -c "print(f'{$merge_cpu / max($bytes / 1048576, 1e-9):.4f}')") s"
    done
done
