#!/usr/bin/env bash
# Import benchmark for `retryctl history --lookout-db` (issue 8 item 5; BENCHMARKS.md).
#
# Starts a throwaway PostgreSQL (as user `postgres` when run as root: initdb refuses root),
# builds the schema from contract/lookout/migrations/*.sql (vendored) (name order, each file
# one query outside a transaction), loads N jobs with 3 runs each (2 failed with a
# zlib-compressed error, 1 succeeded) with generate_series, and runs the release binary
# under /usr/bin/time -v for each N: jobs/s and peak RSS. Memory should be flat across N.
#
#   scripts/bench-history.sh            # N = 10000 and 100000
#   scripts/bench-history.sh 1000 5000  # other sizes
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@"); [ ${#sizes[@]} -eq 0 ] && sizes=(10000 100000)

bin_dir=$(dirname "$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
migrations=contract/lookout/migrations
[ -d "$migrations" ] || { echo "no $migrations (run from a complete clone)" >&2; exit 2; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --locked --quiet
retryctl=$CARGO_TARGET_DIR/release/retryctl

work=$(mktemp -d /tmp/retryctl-bench-pg.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; as=(runuser -u postgres --); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${as[@]}" "$bin_dir/initdb" -D "$work/data" -U bench -A trust --no-sync -E UTF8 --locale=C >/dev/null
"${as[@]}" "$bin_dir/pg_ctl" -D "$work/data" -l "$work/log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off" start >/dev/null
trap '"${as[@]}" "$bin_dir/pg_ctl" -D "$work/data" -m fast stop >/dev/null; rm -rf "$work"' EXIT
psql() { command psql -q -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U bench "$@"; }

for n in "${sizes[@]}"; do
  db=bench_$n
  psql -d postgres -c "CREATE DATABASE $db" >/dev/null
  for f in $(ls "$migrations"/*.sql | sort); do psql -d "$db" -c "$(cat "$f")" >/dev/null; done
  # zlib stream of "OOMKilled: container used its memory limit" (python's zlib.compress).
  err=$(python3 -c 'import zlib; print(zlib.compress(b"OOMKilled: container used its memory limit").hex())')
  psql -d "$db" >/dev/null <<SQL
INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state,
                 last_transition_time, last_transition_time_seconds, annotations)
SELECT format('job-%s', lpad(i::text, 8, '0')), 'ml', 'alice', 'set-' || (i % 100), 1000, 8589934592, 0, 0, 1,
       timestamp '2026-11-16' + i * interval '1 second', 4, now(), 0, '{"team": "vision"}'::jsonb
  FROM generate_series(1, $n) i;
INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code,
                     error, failure_category)
SELECT format('run-%s-%s', i, k), format('job-%s', lpad(i::text, 8, '0')), 'c1', 'node-' || (i % 50),
       timestamp '2026-11-16' + (i * 10 + k * 3) * interval '1 second',
       timestamp '2026-11-16' + (i * 10 + k * 3) * interval '1 second',
       timestamp '2026-11-16' + (i * 10 + k * 3 + 1) * interval '1 second',
       timestamp '2026-11-16' + (i * 10 + k * 3 + 2) * interval '1 second',
       CASE WHEN k = 2 THEN 3 ELSE 4 END, CASE WHEN k = 2 THEN 0 ELSE 137 END,
       CASE WHEN k = 2 THEN NULL ELSE '\\x$err'::bytea END, CASE WHEN k = 2 THEN NULL ELSE 'oom' END
  FROM generate_series(1, $n) i, generate_series(0, 2) k;
ANALYZE;
SQL
  /usr/bin/time -v "$retryctl" history --queue ml --lookout-db "postgresql://bench@127.0.0.1:$port/$db" \
    --output-file "$work/out.jsonl" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
  lines=$(wc -l <"$work/out.jsonl")
  printf '%8d jobs  %8d runs  %6.2f s  %9.0f jobs/s  peak RSS %6d KiB  (%s lines written)\n' \
    "$n" $((n * 3)) "$secs" "$(echo "$n / $secs" | bc -l)" "$rss" "$lines"
  grep '^history:' "$work/time.txt"
done
