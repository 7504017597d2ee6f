#!/usr/bin/env bash
# Memory of `retryctl watch` while jobs wait for their runs (docs/watch.md "A job is counted
# once its record is complete"; BENCHMARKS.md "watch"): N jobs of queue `ml` are written ended
# (failed a minute ago) with no run, as Lookout's ingester commits a job's terminal state
# before its runs; watch reads them and keeps them waiting in --state. Its RSS (VmRSS) and
# peak (VmHWM) are read once every job waits and a few polls have read them again by id;
# then the runs are written in one statement (2 failed runs a job), and they are read once
# watch has counted every job. The bar: 200,000 jobs waiting cost less than 64 MiB.
#
#   scripts/bench-watch-waiting.sh                # N = 200000
#   scripts/bench-watch-waiting.sh 50000
#   RETRYCTL_BIN=/tmp/retryctl-old scripts/bench-watch-waiting.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ -n "${RETRYCTL_BIN:-}" ]; then
  retryctl=$RETRYCTL_BIN
else
  cargo build --profile profiling --locked --quiet --bin retryctl
  retryctl=$CARGO_TARGET_DIR/profiling/retryctl
fi
. scripts/bench-pg.sh
lookout_db waiting
psql -d waiting >/dev/null <<SQL
INSERT INTO job (job_id, queue, owner, jobset, namespace, cpu, memory, ephemeral_storage, gpu, priority, submitted, state,
                 last_transition_time, last_transition_time_seconds, priority_class, annotations)
SELECT 'job-' || lpad(g::text, 8, '0'), 'ml', 'alice', 'train', 'default', 1000, 0, 0, 1, 1,
       (now() AT TIME ZONE 'UTC') - interval '3 hours', 5, (now() AT TIME ZONE 'UTC') - interval '1 minute',
       extract(epoch FROM now())::bigint, 'armada-default', '{}'::jsonb
  FROM generate_series(1, $n) g;
VACUUM ANALYZE;
SQL
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $retryctl ($(git rev-parse --short HEAD 2>/dev/null || echo '?')); $n jobs ended with no run"
python3 - "$retryctl" "postgresql://bench@127.0.0.1:$port/waiting" "$n" "$work/state.json" "$port" <<'PY'
import re, signal, subprocess, sys, threading, time, urllib.request
retryctl, dsn, n, state, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
p = subprocess.Popen([retryctl, "watch", "--baseline", "testdata/lookout/old", "-f", "testdata/lookout/new",
                      "--lookout-db", dsn, "--queue", "ml", "--since", "1d", "--poll", "2s", "--settle", "1h",
                      "--state", state, "--listen", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
url = re.search(r"http://\S+", p.stderr.readline()).group(0)
threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
def get(path):
    try:
        return urllib.request.urlopen(url + path, timeout=60).read().decode()
    except Exception as e:
        return getattr(e, "read", lambda: b"")().decode()
def mem():
    s = {l.split(":")[0]: int(l.split()[1]) for l in open(f"/proc/{p.pid}/status") if l.startswith(("VmRSS", "VmHWM"))}
    return s["VmRSS"] / 1024, s["VmHWM"] / 1024
start = time.monotonic()
while f"{n} wait for their runs" not in get("/healthz"):
    if p.poll() is not None or time.monotonic() - start > 3600:
        sys.exit("watch did not keep every job waiting")
    time.sleep(0.5)
read = time.monotonic() - start
time.sleep(10)  # a few polls, each reading every waiting job again by id
rss, hwm = mem()
size = len(open(state).read())
print(f"{n} jobs waiting after {read:.1f} s: RSS {rss:.1f} MiB, peak {hwm:.1f} MiB; --state {size / 2**20:.1f} MiB")
subprocess.run(["psql", "-q", "-X", "-h", "127.0.0.1", "-p", port, "-U", "bench", "-d", "waiting", "-c",
                "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code, pool) "
                "SELECT 'run-' || g || '-' || k, 'job-' || lpad(g::text, 8, '0'), 'c1', 'node-' || (g % 50), "
                "(now() AT TIME ZONE 'UTC') - interval '3 hours' + k * interval '1 hour', "
                "(now() AT TIME ZONE 'UTC') - interval '3 hours' + k * interval '1 hour', "
                "(now() AT TIME ZONE 'UTC') - interval '3 hours' + k * interval '1 hour', "
                "(now() AT TIME ZONE 'UTC') - interval '2 hours' + k * interval '1 hour' - interval '1 second', "
                f"4, 137, 'gpu' FROM generate_series(1, {n}) g, generate_series(0, 1) k"], check=True)
landed = time.monotonic()
def jobs():
    return sum(float(l.rsplit(" ", 1)[1]) for l in get("/metrics").splitlines() if l.startswith("retryctl_watch_jobs_total{"))
while jobs() < n:
    if p.poll() is not None or time.monotonic() - landed > 3600:
        sys.exit("watch did not count every job")
    time.sleep(0.5)
rss, hwm = mem()
print(f"runs written: every job counted {time.monotonic() - landed:.1f} s later: RSS {rss:.1f} MiB, peak {hwm:.1f} MiB")
p.send_signal(signal.SIGTERM)
p.wait(timeout=30)
PY
