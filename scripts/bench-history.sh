#!/usr/bin/env bash
# Import benchmark for `retryctl history --lookout-db` (docs/reference/bars.md,
# "history's memory"; BENCHMARKS.md "history import").
#
# Starts a throwaway PostgreSQL (as user `postgres` when run as root: initdb refuses root),
# builds the schema from contract/lookout/migrations/*.sql (vendored) (name order, each file
# one query outside a transaction), loads N jobs with 3 runs each (2 failed with a
# zlib-compressed error, 1 succeeded) with generate_series, then, side by side in rounds:
#
#   floor (text)    psql -c "COPY (<the statement retryctl runs>) TO STDOUT" > /dev/null
#   floor (binary)  the same with (FORMAT binary), as retryctl reads it
#   retryctl        retryctl history --lookout-db ... > /dev/null
#   before          the same with $BEFORE (an older binary), when set
#   simulate        retryctl simulate -f testdata/lookout/new --lookout-db ... --queue ml
#                   (the history streamed into the replay, the summary printed)
#   simulate jsonl  the same with -o jsonl > /dev/null (a record per job rendered and written)
#   … (before)      each simulate row again with $BEFORE, when set, right after it
#
# each under /usr/bin/time: wall, user CPU, peak RSS, and retryctl's wall over the text floor.
# The statement is the one `retryctl -v history` prints, so the floor reads the same columns
# of the same rows. Memory should be flat across N.
#
# `bomb` instead of sizes: one database of 1,000 jobs plus one whose failed run's `error` is a
# zlib bomb (512 MiB of text in about 0.5 MiB): peak RSS and bytes written,
# for retryctl and $BEFORE.
#
# `shards N` instead (docs/past-one-machine.md): one database of N jobs; `simulate --lookout-db` whole, then
# as 4 shards (`--shard I/4 -o partial`, `--to` as shards need), each after `pg_stat_reset()`:
# the rows PostgreSQL says it read from `job` and `job_run` (pg_stat_user_tables:
# seq_tup_read + idx_tup_fetch), the bytes the server sent to retryctl (counted by a relay
# between the two: every byte of every connection, the protocol's framing included), and
# each run's wall and CPU. The bar: 4 shards receive at most 1.1x the bytes one process does.
#
#   scripts/bench-history.sh                        # N = 100000 and 1000000
#   scripts/bench-history.sh shards 1000000
#   scripts/bench-history.sh 10000 50000            # other sizes
#   BEFORE=/tmp/retryctl-old ROUNDS=3 scripts/bench-history.sh 100000
#   BEFORE=/tmp/retryctl-old scripts/bench-history.sh bomb
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@"); [ ${#sizes[@]} -eq 0 ] && sizes=(100000 1000000)
rounds=${ROUNDS:-2}

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --profile profiling --locked --quiet
retryctl=$CARGO_TARGET_DIR/profiling/retryctl

. scripts/bench-pg.sh

# A database of $2 jobs × 3 runs named $1.
load() {
  local db=$1 n=$2
  lookout_db "$db"
  # zlib stream of "OOMKilled: container used its memory limit" (python's zlib.compress).
  local err
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
VACUUM ANALYZE;
SQL
}

# Runs "$@" under /usr/bin/time, its stdout to /dev/null and its stderr to $work/err.txt;
# prints "wall user rss" (s, s, KiB).
timed() {
  /usr/bin/time -o "$work/time.txt" -f '%e %U %M' "$@" >/dev/null 2>"$work/err.txt" ||
    { cat "$work/err.txt" "$work/time.txt" >&2; exit 1; }
  tail -1 "$work/time.txt"
}

row() { printf '%-16s %7.2f s  %6.2f s user  %7d KiB%s\n' "$1" "$2" "$3" "$4" "${5:-}"; }

if [ "${sizes[0]}" = bomb ]; then
  load bench_bomb 1000
  # 512 MiB of text, compressed at level 9 as a stream (about 0.5 MiB), as hex for psql.
  python3 - "$work/bomb.hex" <<'PY'
import sys, zlib
z = zlib.compressobj(9)
chunk = b"OOMKilled " + b"A" * (2**20 - 10)  # 1 MiB
out = [z.compress(chunk) for _ in range(512)]
out.append(z.flush())
data = b"".join(out)
open(sys.argv[1], "w").write(data.hex())
print(f"bomb: {512 * len(chunk) / 2**20:.0f} MiB of text in {len(data)} bytes")
PY
  psql -d bench_bomb >/dev/null <<SQL
INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state,
                 last_transition_time, last_transition_time_seconds, annotations)
VALUES ('job-bomb', 'ml', 'mallory', 's', 1, 1, 0, 0, 1, '2026-11-16', 5, now(), 0, '{}');
INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code, error)
VALUES ('run-bomb', 'job-bomb', 'c1', 'n', '2026-11-16', '2026-11-16', '2026-11-16 00:00:01', '2026-11-16 00:00:02', 4, 1,
        decode('$(cat "$work/bomb.hex")', 'hex'));
SQL
  dsn="postgresql://bench@127.0.0.1:$port/bench_bomb"
  for ((r = 1; r <= rounds; r++)); do
    for b in retryctl ${BEFORE:+before}; do
      bin=$retryctl; [ "$b" = before ] && bin=$BEFORE
      read -r wall user rss < <(timed "$bin" history --queue ml --lookout-db "$dsn" --output-file "$work/out.jsonl")
      row "$b" "$wall" "$user" "$rss" "  $(stat -c %s "$work/out.jsonl") bytes written"
    done
  done
  exit 0
fi

# Rows read from job and job_run since the last reset, by PostgreSQL's own statistics.
rows_read() {
  sleep 0.6  # the statistics of a backend that just closed are flushed within 0.5 s
  psql -d "$1" -At -F ' ' -c "SELECT relname, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
    FROM pg_stat_user_tables WHERE relname IN ('job', 'job_run') ORDER BY relname" | tr '\n' ' '
}

# A relay from 127.0.0.1:$relay_port to the server that appends, as each connection closes,
# the bytes the server sent on it to $work/relayed.
start_relay() {
  relay_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  python3 - "$relay_port" "$port" "$work/relayed" <<'PY' &
import socket, sys, threading
listen, upstream, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
def pipe(src, dst, count):
    n = 0
    try:
        while True:
            b = src.recv(1 << 16)
            if not b:
                break
            dst.sendall(b)
            n += len(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    if count:
        with lock, open(out, "a") as f:
            f.write(f"{n}\n")
def serve(client):
    server = socket.create_connection(("127.0.0.1", upstream))
    threading.Thread(target=pipe, args=(client, server, False), daemon=True).start()
    pipe(server, client, True)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", listen))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
  relay_pid=$!
  sleep 0.5
}
# The bytes relayed since the last call (every connection closed by then).
relayed() {
  sleep 0.2
  python3 -c 'import sys; print(sum(int(l) for l in open(sys.argv[1]) if l.strip()))' "$work/relayed" 2>/dev/null || echo 0
  : >"$work/relayed"
}

if [ "${sizes[0]}" = shards ]; then
  n=${sizes[1]:-1000000}
  db=bench_shards_$n
  load "$db" "$n"
  start_relay
  trap 'kill $relay_pid 2>/dev/null; "${as[@]}" "$bin_dir/pg_ctl" -D "$work/data" -m fast stop >/dev/null; rm -rf "$work"' EXIT
  dsn="postgresql://bench@127.0.0.1:$relay_port/$db"
  # Every job: the loaded ones are submitted from 2026-11-16 on, one a second.
  window=(--from 2026-11-01T00:00:00Z --to 2027-01-01T00:00:00Z)
  echo "== $n jobs, $((n * 3)) runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  : >"$work/relayed"
  for ((r = 1; r <= rounds; r++)); do
    psql -d "$db" -c 'SELECT pg_stat_reset()' >/dev/null
    read -r w u m < <(timed "$retryctl" simulate -f testdata/lookout/new --lookout-db "$dsn" --queue ml "${window[@]}")
    whole=$(relayed)
    printf '%-10s %6.2f s wall %6.2f s user  %11d bytes received  rows read: %s\n' "whole" "$w" "$u" "$whole" "$(rows_read "$db")"
    sum=0
    for i in 0 1 2 3; do
      psql -d "$db" -c 'SELECT pg_stat_reset()' >/dev/null
      read -r w u m < <(timed "$retryctl" simulate -f testdata/lookout/new --lookout-db "$dsn" --queue ml "${window[@]}" --shard "$i/4" -o partial)
      got=$(relayed)
      sum=$((sum + got))
      printf '%-10s %6.2f s wall %6.2f s user  %11d bytes received  rows read: %s\n' "shard $i/4" "$w" "$u" "$got" "$(rows_read "$db")"
    done
    echo "4 shards received $sum bytes: $(python3 -c "print(f'{$sum / $whole:.3f}')")x one process (bar <= 1.1)"
  done
  exit 0
fi

for n in "${sizes[@]}"; do
  db=bench_$n
  load "$db" "$n"
  dsn="postgresql://bench@127.0.0.1:$port/$db"
  # The statement retryctl runs (its -v line), and the same as text for the floor.
  statement=$("$retryctl" -v history --queue ml --lookout-db "$dsn" 2>&1 >/dev/null | sed -n 's/^lookout-db: //p')
  text_statement=${statement% (FORMAT binary)}
  echo "== $n jobs, $((n * 3)) runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for ((r = 1; r <= rounds; r++)); do
    read -r fw fu fr < <(timed "$psql_bin" "${pg[@]}" -d "$db" -c "$text_statement" -o /dev/null)
    row "floor (text)" "$fw" "$fu" "$fr"
    read -r w u m < <(timed "$psql_bin" "${pg[@]}" -d "$db" -c "$statement" -o /dev/null)
    row "floor (binary)" "$w" "$u" "$m"
    for b in retryctl ${BEFORE:+before}; do
      bin=$retryctl; [ "$b" = before ] && bin=$BEFORE
      read -r w u m < <(timed "$bin" history --queue ml --lookout-db "$dsn")
      row "$b" "$w" "$u" "$m" "$(printf '  %6.0f jobs/s  %4.2fx the text floor' "$(echo "$n / $w" | bc -l)" "$(echo "$w / $fw" | bc -l)")"
    done
    for format in table jsonl; do
      for b in retryctl ${BEFORE:+before}; do
        bin=$retryctl; [ "$b" = before ] && bin=$BEFORE
        read -r w u m < <(timed "$bin" simulate -f testdata/lookout/new -o "$format" --lookout-db "$dsn" --queue ml)
        name=simulate; [ "$format" = table ] || name="simulate $format"
        [ "$b" = before ] && name="$name (before)"
        row "$name" "$w" "$u" "$m" "$(printf '  %6.0f jobs/s  %4.2fx the text floor' "$(echo "$n / $w" | bc -l)" "$(echo "$w / $fw" | bc -l)")"
      done
    done
  done
  # The last simulate's stderr: its summary lines (jsonl) and `history`'s.
  grep -E '^(history:|  jobs:)' "$work/err.txt"
done
