#!/usr/bin/env bash
# `retryctl serve` against its own stack (docs/reference/bars.md): GET throughput of serve and of an
# axum hello-world (examples/hello_axum.rs: the same axum + tokio, one route, no middleware)
# with each server pinned to core 0 and wrk pinned to core 1, side by side, then the ratio.
# Bar: serve's GET within 1.25x of the hello-world (ratio hello / serve <= 1.25).
# Then the same policy read over gRPC (BENCHMARKS.md, gRPC against REST): api.RetryPolicyService/GetRetryPolicy on the
# same serve, same core, with h2load, next to the REST GET (wrk's row above, and h2load --h1
# at wrk's concurrency: the same client program for both protocols). The fair concurrency is
# the same number of requests in flight: a REST client needs a connection per request in
# flight (wrk -c16), a gRPC client multiplexes its calls on one channel, one connection
# (h2load -c1 -m16). Also shown: 16 channels with one call each (-c16 -m1, wrk's connection
# count) and 128 in flight (-c16 -m8).
# Bar: gRPC GetRetryPolicy at least as many requests/s as the REST GET (16 in flight each).
#
# Usage: scripts/bench-serve.sh [DURATION_SECONDS (default 5)] [CONNECTIONS (default 16)]
#   BIN=path/to/retryctl scripts/bench-serve.sh   measures another build of retryctl
#   (BENCH_GRPC=0 for a build without gRPC).
#   BENCH_RATES=1 scripts/bench-serve.sh   adds gRPC at fixed rates below saturation (CPU per call).
# Needs wrk (Debian package `wrk`), h2load (Debian package `nghttp2-client`; without it the
# gRPC rows are skipped), taskset (util-linux) and 2 cores.
set -euo pipefail

cd "$(dirname "$0")/.."
duration="${1:-5}"
conns="${2:-16}"
command -v wrk >/dev/null || { echo "bench-serve.sh: wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "bench-serve.sh: needs 2 cores (server on one, wrk on the other)" >&2; exit 2; }
target="${CARGO_TARGET_DIR:-target}"
bin="${BIN:-$target/profiling/retryctl}"
hello="$target/profiling/examples/hello_axum"
[ -x "$bin" ] || cargo build --profile profiling --locked --bin retryctl
[ -x "$hello" ] || cargo build --profile profiling --locked --example hello_axum

tmp="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# start VAR LOGFILE CMD...: runs CMD pinned to core 0 and sets VAR to the URL it announces.
# (Not a command substitution: the server would hold its pipe open and the substitution would
# never end, and the pid would be recorded in a subshell.)
start() {
  local var="$1" log="$2"; shift 2
  taskset -c 0 "$@" >/dev/null 2>"$log" &
  pids+=($!)
  for _ in $(seq 100); do grep -q 'listening on' "$log" 2>/dev/null && break; sleep 0.05; done
  printf -v "$var" '%s' "$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1)"
}

# cpu PID: CPU time the process has used, in clock ticks (utime + stime).
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# measure URL PID: requests per second wrk measured (one thread on core 1), its p99, and the
# server's CPU time per request in microseconds (less disturbed by other load than req/s).
measure() {
  local before after
  before="$(cpu "$2")"
  taskset -c 1 wrk -t1 -c"$conns" -d"${duration}s" --latency "$1" >"$tmp/wrk.out"
  after="$(cpu "$2")"
  if grep -q 'Non-2xx\|Socket errors' "$tmp/wrk.out"; then cat "$tmp/wrk.out" >&2; echo "bench-serve.sh: errors" >&2; exit 1; fi
  local rps p99 n
  rps="$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.out")"
  p99="$(awk '$1 == "99%" {print $2}' "$tmp/wrk.out")"
  n="$(awk '/requests in/ {print $1}' "$tmp/wrk.out")"
  echo "$rps $p99 $(awk -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')"
}

# h2load_run PID H2LOAD-ARGS...: runs h2load (one thread, on core 1, for the duration) and
# prints its requests per second and the server's CPU time per request in microseconds.
h2load_run() {
  local pid="$1" before after
  shift
  before="$(cpu "$pid")"
  taskset -c 1 h2load -t1 -D"$duration" "$@" >"$tmp/h2load.out"
  after="$(cpu "$pid")"
  if ! grep -q ' 0 failed, 0 errored' "$tmp/h2load.out"; then cat "$tmp/h2load.out" >&2; echo "bench-serve.sh: errors" >&2; exit 1; fi
  local rps n
  rps="$(awk '/^finished in/ {print $4}' "$tmp/h2load.out")"
  n="$(awk '/^requests:/ {print $8}' "$tmp/h2load.out")"
  echo "$rps $(awk -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')"
}

# measure_h1 URL PID: h2load speaking HTTP/1.1 (`--h1`) at wrk's concurrency.
measure_h1() { h2load_run "$2" --h1 -c"$conns" "$1"; }

# measure_grpc URL PID CONNECTIONS STREAMS: h2load calling GetRetryPolicy{name: bench}: one
# gRPC frame (no compression, 7 bytes: field 1, "bench").
measure_grpc() {
  printf '\x00\x00\x00\x00\x07\x0a\x05bench' >"$tmp/get.grpc"
  h2load_run "$2" -c"$3" -m"$4" -d "$tmp/get.grpc" -H 'content-type: application/grpc' -H 'te: trailers' \
    "$1/api.RetryPolicyService/GetRetryPolicy"
}

start hello_url "$tmp/hello.log" "$hello"
start serve_url "$tmp/serve.log" "$bin" serve --listen 127.0.0.1:0 --db "$tmp/armada.db"
[ -n "$hello_url" ] && [ -n "$serve_url" ] || { echo "bench-serve.sh: a server did not start" >&2; cat "$tmp"/*.log >&2; exit 1; }
curl -fsS -XPOST "$serve_url/v1/retry-policy" -H "Content-Type: application/json" \
  -d '{"name":"bench","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"}]}' >/dev/null

hello_pid="${pids[0]}"
serve_pid="${pids[1]}"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); servers on core 0, wrk -t1 -c$conns -d${duration}s on core 1"
out="$(measure "$hello_url/" "$hello_pid")"; read -r h_rps h_p99 h_cpu <<<"$out"
printf '%-40s %10s req/s  p99 %-8s %6s us CPU/req\n' "axum hello-world GET /" "$h_rps" "$h_p99" "$h_cpu"
out="$(measure "$serve_url/v1/retry-policy/bench" "$serve_pid")"; read -r s_rps s_p99 s_cpu <<<"$out"
printf '%-40s %10s req/s  p99 %-8s %6s us CPU/req\n' "serve GET /v1/retry-policy/bench" "$s_rps" "$s_p99" "$s_cpu"
out="$(measure "$serve_url/health" "$serve_pid")"; read -r x_rps x_p99 x_cpu <<<"$out"
printf '%-40s %10s req/s  p99 %-8s %6s us CPU/req\n' "serve GET /health" "$x_rps" "$x_p99" "$x_cpu"
if [ "${BENCH_GRPC:-1}" = 0 ]; then
  echo "BENCH_GRPC=0: gRPC rows skipped"
elif command -v h2load >/dev/null; then
  out="$(measure_h1 "$serve_url/v1/retry-policy/bench" "$serve_pid")"; read -r r_rps r_cpu <<<"$out"
  printf '%-40s %10s req/s  %-12s %6s us CPU/req\n' "serve GET (h2load --h1 -c$conns)" "$r_rps" "" "$r_cpu"
  for cm in "1 $conns" "$conns 1" "$conns 8"; do
    read -r c m <<<"$cm"
    out="$(measure_grpc "$serve_url" "$serve_pid" "$c" "$m")"; read -r g_rps g_cpu <<<"$out"
    printf '%-40s %10s req/s  %-12s %6s us CPU/req\n' "serve gRPC GetRetryPolicy -c$c -m$m" "$g_rps" "" "$g_cpu"
    [ "$c" = 1 ] && gm_rps="$g_rps" && gm_cpu="$g_cpu"
  done
  # A call that went wrong is still HTTP 200 (its status is in the trailers): the log says.
  if grep -q 'GetRetryPolicy 200 (' "$tmp/serve.log"; then echo "bench-serve.sh: gRPC calls failed" >&2; exit 1; fi
  awk -v g="$gm_rps" -v s="$s_rps" -v r="$r_rps" -v gc="$gm_cpu" -v sc="$s_cpu" -v n="$conns" 'BEGIN {
    printf "ratio: gRPC GetRetryPolicy (one channel, %d in flight) / REST GET (wrk -c%d) = %.2f req/s (bar: >= 1), %.2f CPU per request\n", n, n, g / s, gc / sc
    printf "ratio: gRPC GetRetryPolicy (one channel, %d in flight) / REST GET (h2load --h1 -c%d) = %.2f req/s\n", n, n, g / r }'
  if [ "${BENCH_RATES:-0}" = 1 ]; then
    # Below saturation (what staying awake after a multiplexing client's calls costs:
    # `WAKEFUL`, src/server/http2.rs): the server's CPU per call at a fixed rate (--rps is per
    # connection). CPU time comes in 10 ms ticks: 1 us per call at 10,000 calls.
    for spec in "-c1 -m1 --rps 1000" "-c1 -m4 --rps 4000" "-c16 -m1 --rps 1000" "-c1 -m16 --rps 20000"; do
      # shellcheck disable=SC2086 # the spec is several arguments
      out="$(h2load_run "$serve_pid" $spec -d "$tmp/get.grpc" -H 'content-type: application/grpc' -H 'te: trailers' \
        "$serve_url/api.RetryPolicyService/GetRetryPolicy")"
      read -r _ f_cpu <<<"$out"
      printf '%-40s %10s  %-12s %6s us CPU/call\n' "gRPC at a fixed rate $spec" "" "" "$f_cpu"
    done
  fi
else
  echo "h2load is not installed (Debian: apt-get install -y nghttp2-client): gRPC rows skipped"
fi
echo "request log lines written: $(grep -c 'retryctl serve: GET' "$tmp/serve.log")"
awk -v h="$h_rps" -v s="$s_rps" -v hc="$h_cpu" -v sc="$s_cpu" 'BEGIN {
  printf "ratio: hello-world / serve GET = %.2f req/s, %.2f CPU per request (bar <= 1.25)\n", h / s, sc / hc }'
