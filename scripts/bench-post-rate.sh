#!/usr/bin/env bash
# Writes at a fixed rate against `retryctl serve` (docs/reference/bars.md: ">= 10,000 writes/s with resource
# versions on; p99 under 10 ms; zero errors"). An open-loop generator (examples/load_rate.rs)
# offers POST /v1/retry-policy (a new name each: one write each) at each rate step and
# measures every request's latency from the time it was due, so a server stall is counted
# for every request it delays (wrk, closed-loop, measures its own queueing instead).
#
# Each step gets a fresh server and a fresh database file on disk (under $TMPDIR, or DBDIR:
# DBDIR=/dev/shm puts it on tmpfs, to tell the disk's share of the tail from the rest), with the
# defaults of `retryctl serve`: WAL, synchronous=NORMAL, versions and the request log on.
# The server is pinned to core 0, the generator to core 1. Also printed per step: the load
# average before it, the server's CPU per request, its own p99 (request log durations) and
# the WAL's size at the end.
#
# Usage: scripts/bench-post-rate.sh [DURATION_SECONDS (default 10)] [RATES (default "10000 12000 15000")]
#   CONNECTIONS=64 ROUTE=post|put|get BIN=path/to/retryctl DBDIR=dir scripts/bench-post-rate.sh ...
#   TIMELINE=1 adds each second's percentiles (where in the run the slow requests were).
# Needs taskset (util-linux) and 2 cores. Bar: p99 (from due) < 10 ms and no errors at 10,000/s.
set -euo pipefail

cd "$(dirname "$0")/.."
duration="${1:-10}"
rates="${2:-10000 12000 15000}"
conns="${CONNECTIONS:-64}"
route="${ROUTE:-post}"
[ "$(nproc)" -ge 2 ] || { echo "bench-post-rate.sh: needs 2 cores (server on one, generator on the other)" >&2; exit 2; }
target="${CARGO_TARGET_DIR:-target}"
bin="${BIN:-$target/profiling/retryctl}"
gen="$target/profiling/examples/load_rate"
[ -n "${BIN:-}" ] || cargo build --profile profiling --locked --bin retryctl
cargo build --profile profiling --locked --example load_rate

tmp="$(mktemp -d)"
db="$(mktemp -d "${DBDIR:-$tmp}/bench-post-rate.XXXXXX")"
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
trap 'stop_server; rm -rf "$db" "$tmp"' EXIT

# cpu PID: CPU time the process has used, in clock ticks (utime + stime).
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

echo "machine: $(nproc) cores; server $bin on core 0, load_rate on core 1; $route, $conns connections, ${duration}s per step; database in $db"
status=0
for rate in $rates; do
  rm -f "$db"/armada.db*
  taskset -c 0 "$bin" serve --listen 127.0.0.1:0 --db "$db/armada.db" 2>"$tmp/server.log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q 'listening on' "$tmp/server.log" 2>/dev/null && break; sleep 0.05; done
  url="$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/server.log" | head -1)"
  [ -n "$url" ] || { echo "bench-post-rate.sh: server did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
  if [ "$route" = get ]; then
    curl -fsS -XPOST "$url/v1/retry-policy" -H "Content-Type: application/json" \
      -d '{"name":"bench","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"}]}' >/dev/null
  fi
  echo "== $(date -u +%H:%M:%S) rate $rate/s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  before="$(cpu "$server_pid")"
  taskset -c 1 "$gen" "$url" --rate "$rate" --duration "$duration" --connections "$conns" --route "$route" \
    ${TIMELINE:+--timeline} | tee "$tmp/gen.out" || status=1
  after="$(cpu "$server_pid")"
  wal="$(stat -c %s "$db/armada.db-wal" 2>/dev/null || echo 0)"
  stop_server
  # The server's own view: durations from its request log (`... 201 0.412ms`), the same
  # requests measured from when the server read them to when it answered.
  grep -o ' [0-9]*\.[0-9]*ms$' "$tmp/server.log" | tr -d ' ms' | sort -n >"$tmp/server.ms" || true
  awk -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" -v wal="$wal" '
    { v[NR] = $1 }
    END {
      n = NR; if (n == 0) { print "  server: no request log lines"; exit }
      p99 = v[int(n * 0.99 + 0.999)]; p999 = v[int(n * 0.999 + 0.999)]
      printf "  server: %d requests logged, own p99 %.2f ms, p99.9 %.2f ms, max %.2f ms; CPU %.1f us/request; WAL at the end %.0f MB\n",
        n, p99, p999, v[n], t / hz * 1e6 / n, wal / 1e6
    }' "$tmp/server.ms"
  awk -v rate="$rate" '/latency from due/ { for (i = 1; i <= NF; i++) if ($i == "p99") p = $(i + 1) }
    /errors:/ { e = $2 }
    END { printf "  bar at %d/s (p99 from due < 10 ms, no errors): %s\n", rate, (p < 10 && e == 0) ? "met" : "NOT met" }' "$tmp/gen.out"
done
exit "$status"
