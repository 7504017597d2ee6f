#!/usr/bin/env bash
# Benchmark of `retryctl watch` (docs/watch.md "What it costs"; BENCHMARKS.md "watch"): a poll
# of N new jobs against `simulate --baseline --lookout-db` on the same jobs, and watch's memory
# once it has watched them.
#
# Starts a throwaway PostgreSQL (as user `postgres` when run as root: initdb refuses root),
# builds the schema from contract/lookout/migrations/*.sql, and loads N jobs of queue `ml`, 3
# runs each (as scripts/bench-history.sh does: 2 failed runs with an OOM error, then a success;
# every 4th job ends failed after its 3 failed runs), whose last transitions are one second
# apart and end a day before now. Then, in rounds, side by side:
#
#   simulate   retryctl simulate -f testdata/lookout/new --baseline testdata/lookout/old
#              --lookout-db … --queue ml --since … (the plan's table, to /dev/null)
#   watch      retryctl watch --baseline testdata/lookout/old -f testdata/lookout/new
#              --since … --poll 1h on a fresh --state: the time from its start until
#              /metrics counts the N jobs (its first poll reads them all, page after page),
#              its CPU until then (/proc/PID/stat), and its peak RSS (VmHWM) once it has
#              watched them; then SIGTERM, and the time it takes to save and exit.
#
# Both read the same rows with the same reader and replay them on every core; the bar
# (docs/reference/bars.md "watch"): watch's poll at most 2× simulate's wall time, peak RSS
# under 64 MiB at N = 1,000,000.
#
#   scripts/bench-watch.sh                  # N = 100000 and 1000000, 3 rounds
#   ROUNDS=5 scripts/bench-watch.sh 100000
#   RETRYCTL_BIN=/tmp/retryctl-old scripts/bench-watch.sh 100000
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@"); [ ${#sizes[@]} -eq 0 ] && sizes=(100000 1000000)
rounds=${ROUNDS:-3}

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ -n "${RETRYCTL_BIN:-}" ]; then
  retryctl=$RETRYCTL_BIN
else
  cargo build --profile profiling --locked --quiet --bin retryctl
  retryctl=$CARGO_TARGET_DIR/profiling/retryctl
fi

. scripts/bench-pg.sh

# A database of $2 jobs × 3 runs named $1; the last transitions are one second apart and end a
# day before now, so that `--since` of their first covers them all and no more.
load() {
  local db=$1 n=$2
  lookout_db "$db"
  local err
  err=$(python3 -c 'import zlib; print(zlib.compress(b"OOMKilled: container used its memory limit").hex())')
  psql -d "$db" >/dev/null <<SQL
CREATE TEMP TABLE t0 AS SELECT date_trunc('second', now() AT TIME ZONE 'UTC') - interval '1 day' - $n * interval '1 second' AS t;
INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state,
                 last_transition_time, last_transition_time_seconds, annotations)
SELECT format('job-%s', lpad(i::text, 8, '0')), 'ml', 'alice', 'set-' || (i % 100), 1000, 8589934592, 0, 1, 1,
       t0.t + i * interval '1 second', CASE WHEN i % 4 = 0 THEN 5 ELSE 4 END,
       t0.t + i * interval '1 second', 0, '{"team": "vision"}'::jsonb
  FROM generate_series(1, $n) i, t0;
INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code,
                     error, failure_category)
SELECT format('run-%s-%s', i, k), format('job-%s', lpad(i::text, 8, '0')), 'c1', 'node-' || (i % 50),
       timestamp '2026-11-16' + (i * 10 + k * 3) * interval '1 second',
       timestamp '2026-11-16' + (i * 10 + k * 3) * interval '1 second',
       timestamp '2026-11-16' + (i * 10 + k * 3 + 1) * interval '1 second',
       timestamp '2026-11-16' + (i * 10 + k * 3 + 2) * interval '1 second',
       CASE WHEN k = 2 AND i % 4 <> 0 THEN 3 ELSE 4 END, CASE WHEN k = 2 AND i % 4 <> 0 THEN 0 ELSE 137 END,
       CASE WHEN k = 2 AND i % 4 <> 0 THEN NULL ELSE '\\x$err'::bytea END,
       CASE WHEN k = 2 AND i % 4 <> 0 THEN NULL ELSE 'oom' END
  FROM generate_series(1, $n) i, generate_series(0, 2) k;
VACUUM ANALYZE;
SQL
}

# The first job's last transition (RFC 3339), for `--since`.
since() { psql -d "$1" -At -c "SELECT to_char(min(last_transition_time), 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM job"; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $retryctl ($(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
for n in "${sizes[@]}"; do
  db="bench_$n"
  load "$db" "$n"
  dsn="postgresql://bench@127.0.0.1:$port/$db"
  from=$(since "$db")
  echo "== $n jobs × 3 runs (last transitions from $from, one a second)"
  for r in $(seq 1 "$rounds"); do
    /usr/bin/time -o "$work/time.txt" -f '%e %U %S %M' "$retryctl" simulate -f testdata/lookout/new \
      --baseline testdata/lookout/old --lookout-db "$dsn" --queue ml --from "$from" >/dev/null 2>"$work/err.txt" ||
      { cat "$work/err.txt" >&2; exit 1; }
    read -r e u s k < <(tail -1 "$work/time.txt")
    sim_cpu=$(python3 -c "print(round($u + $s, 2))")
    read -r w_wall w_cpu w_rss w_stop < <(python3 - "$retryctl" "$dsn" "$from" "$n" "$work/state-$n-$r.json" <<'PY'
import os, re, signal, subprocess, sys, threading, time, urllib.request
retryctl, dsn, since, n, state = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
start = time.monotonic()
p = subprocess.Popen([retryctl, "watch", "--baseline", "testdata/lookout/old", "-f", "testdata/lookout/new",
                      "--lookout-db", dsn, "--queue", "ml", "--since", since, "--poll", "1h", "--state", state,
                      "--listen", "127.0.0.1:0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE, text=True)
first = p.stderr.readline()
url = re.search(r"http://\S+", first).group(0)
threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
def jobs():
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith("retryctl_watch_jobs_total{"))
deadline = start + 3600
while jobs() < n:
    if time.monotonic() > deadline or p.poll() is not None:
        sys.exit(f"watch did not count {n} jobs")
    time.sleep(0.05)
wall = time.monotonic() - start
stat = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
hwm = next(int(l.split()[1]) for l in open(f"/proc/{p.pid}/status") if l.startswith("VmHWM:"))
sent = time.monotonic()
p.send_signal(signal.SIGTERM)
code = p.wait(timeout=30)
stop = time.monotonic() - sent
if code != 0:
    sys.exit(f"watch exited {code} after SIGTERM")
print(f"{wall:.2f} {cpu:.2f} {hwm} {stop:.2f}")
PY
)
    printf '%-8s %8s  simulate %6.2f s wall %6.2f s CPU %6d KiB   watch %6.2f s wall %6.2f s CPU %6d KiB (SIGTERM: %s s)   wall ratio %s\n' \
      "round $r" "$n" "$e" "$sim_cpu" "$k" "$w_wall" "$w_cpu" "$w_rss" "$w_stop" \
      "$(python3 -c "print(f'{$w_wall / $e:.2f}')")"
  done
  psql -d postgres -c "DROP DATABASE $db" >/dev/null
done
