#!/usr/bin/env bash
# The bars for shards (docs/reference/bars.md), measured side by side on one machine:
#   - N shards of a 1,000,000-run history, run one after the other, plus the `merge` of their
#     partials (`-o json`), cost at most 1.15x (N=4) and 1.25x (N=16) the single process
#     printing `-o json` in total CPU (user + system), for `simulate --baseline` and for `tune`
#     (a file's shards read their own byte ranges, so the overhead must not grow with N);
#   - `merge` is linear in the partials' size (the run is repeated on a 3x history);
#   - (what Lookout shards receive: scripts/bench-history.sh shards N.)
#
#   scripts/bench-shards.sh [RUNS]     # default 1000000; needs python3
#   ROUNDS=3 (median of), NS="4 16" (the N measured), WHATS="plan tune", SCALES="1 3"
#
# Each shard writes `-o partial` as it would for a merge; the single process prints the
# table (what a person runs) and JSON (the bars' reference: like a partial, it lists every
# changed job), and the partial of one shard of one (`--shard 0/1 -o partial`: the same work
# unsplit). CPU is user + system from the kernel's accounting of each process, in
# microseconds (GNU time prints hundredths: sixteen shards summed would carry +-0.16 s of
# rounding); each figure is the median of ROUNDS runs, and the single process's `-o json` is
# run again after each set of shards (its median over all of them: this VM's CPU time for
# one run varies by a third from one run to the next, so the bar's ratio of medians wants
# ROUNDS=9 or more there). The merge's output is compared with the single process's, byte
# for byte.
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
ns=(${NS:-4 16})
for scale in ${SCALES:-1 3}; do
    n=$((runs * scale))
    file="$dir/h-$n.jsonl"
    python3 scripts/gen-histories.py "$n" >"$file"
    echo "== $n runs, $(wc -l <"$file") jobs, $(du -m "$file" | cut -f1) MiB"
    for what in ${WHATS:-plan tune}; do
        if [ "$what" = plan ]; then
            cmd=("$bin" simulate "${policies[@]}" "${baseline[@]}" --history "$file")
        else
            cmd=("$bin" tune "${policies[@]}" "${baseline[@]}" --history "$file" "${sweep[@]}")
        fi
        ones=() jsons=() wholes=()
        declare -A totals=() shard_cpus=() merges=() bytes=()
        for _ in $(seq "$rounds"); do
            read -r one_cpu one_wall one_rss < <(cpu "$dir/one.txt" "${cmd[@]}")
            read -r whole_cpu _ _ < <(cpu "$dir/whole.json" "${cmd[@]}" --shard 0/1 -o partial)
            read -r json_cpu _ _ < <(cpu "$dir/one.json" "${cmd[@]}" -o json)
            ones+=("$one_cpu") jsons+=("$json_cpu") wholes+=("$whole_cpu")
            for shards in "${ns[@]}"; do
                sum=0 parts=()
                for i in $(seq 0 $((shards - 1))); do
                    read -r c _ rss < <(cpu "$dir/$what-$i.json" "${cmd[@]}" --shard "$i/$shards" -o partial)
                    sum=$(python3 -c "print(f'{$sum + $c:.4f}')")
                    parts+=("$dir/$what-$i.json")
                done
                read -r merge_cpu _ merge_rss < <(cpu "$dir/merged.json" "$bin" merge "${parts[@]}" -o json)
                cmp -s "$dir/merged.json" "$dir/one.json" || echo "!! merge of $shards shards differs from one process -o json ($what)"
                shard_cpus[$shards]+="$sum " merges[$shards]+="$merge_cpu "
                totals[$shards]+="$(python3 -c "print(f'{$sum + $merge_cpu:.4f}')") "
                read -r json_cpu _ _ < <(cpu "$dir/one.json" "${cmd[@]}" -o json)
                jsons+=("$json_cpu")
                bytes[$shards]=$(cat "${parts[@]}" | wc -c)
                rm -f "${parts[@]}"
            done
        done
        one_cpu=$(median "${ones[*]}" 3) json_cpu=$(median "${jsons[*]}" 3) whole_cpu=$(median "${wholes[*]}" 3)
        printf '%-5s one process: %5ss CPU (%ss wall, %s MiB); -o json %ss; --shard 0/1 -o partial %ss\n' \
            "$what" "$one_cpu" "$one_wall" "$one_rss" "$json_cpu" "$whole_cpu"
        for shards in "${ns[@]}"; do
            bar=1.25
            [ "$shards" -le 4 ] && bar=1.15
            total=$(median "${totals[$shards]}" 3) sum=$(median "${shard_cpus[$shards]}" 3) merge=$(median "${merges[$shards]}" 3)
            printf '      %2s shards: %ss CPU (shards %ss + merge %ss; partials %s KiB)   / -o json = %s (bar <= %s)   / table = %s   / one shard of 1 = %s   merge CPU per partial MiB = %s s\n' \
                "$shards" "$total" "$sum" "$merge" "$((bytes[$shards] / 1024))" "$(ratio "$total" "$json_cpu")" "$bar" \
                "$(ratio "$total" "$one_cpu")" "$(ratio "$total" "$whole_cpu")" \
                "$(python3 -c "print(f'{$merge / max(${bytes[$shards]} / 1048576, 1e-9):.4f}')")"
        done
        unset totals shard_cpus merges bytes
    done
done
