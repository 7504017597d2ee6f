#!/usr/bin/env bash
# What `serve` spends per gRPC call below saturation (issue 22: what staying awake after a
# multiplexing client's calls costs, `WAKEFUL` in src/server/http2.rs): the server pinned to
# core 0, h2load on core 1 sending GetRetryPolicy{name: bench} at a fixed rate (`--rps`, per
# connection) for DURATION seconds, and the server's CPU time per call in microseconds.
# CPU time is counted in clock ticks (10 ms): at 10,000 calls one tick is 1 µs per call.
#
# Usage: scripts/bench-grpc-rate.sh [DURATION_SECONDS (default 10)]
#   BIN=path/to/retryctl scripts/bench-grpc-rate.sh   measures another build
# Needs h2load (Debian package `nghttp2-client`, 1.52 or later for --rps), taskset, 2 cores.
set -euo pipefail

cd "$(dirname "$0")/.."
duration="${1:-10}"
command -v h2load >/dev/null || { echo "bench-grpc-rate.sh: h2load is not installed (apt-get install -y nghttp2-client)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "bench-grpc-rate.sh: needs 2 cores (server on one, h2load on the other)" >&2; exit 2; }
bin="${BIN:-${CARGO_TARGET_DIR:-target}/release/retryctl}"
[ -x "$bin" ] || cargo build --release --locked --bin retryctl

tmp="$(mktemp -d)"
pid=""
cleanup() {
  [ -n "$pid" ] && { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  rm -rf "$tmp"
}
trap cleanup EXIT

taskset -c 0 "$bin" serve --listen 127.0.0.1:0 --db "$tmp/armada.db" >/dev/null 2>"$tmp/serve.log" &
pid=$!
for _ in $(seq 100); do grep -q 'listening on' "$tmp/serve.log" 2>/dev/null && break; sleep 0.05; done
url="$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" | head -1)"
[ -n "$url" ] || { echo "bench-grpc-rate.sh: serve did not start" >&2; cat "$tmp/serve.log" >&2; exit 1; }
curl -fsS -XPOST "$url/v1/retry-policy" -H "Content-Type: application/json" \
  -d '{"name":"bench","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"}]}' >/dev/null
printf '\x00\x00\x00\x00\x07\x0a\x05bench' >"$tmp/get.grpc"

cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); serve on core 0, h2load -t1 -D$duration on core 1"
for spec in "-c1 -m1 --rps 1000" "-c1 -m4 --rps 4000" "-c16 -m1 --rps 1000" "-c1 -m16 --rps 20000"; do
  before="$(cpu)"
  # shellcheck disable=SC2086 # the spec is several arguments
  taskset -c 1 h2load -t1 -D"$duration" $spec -d "$tmp/get.grpc" -H 'content-type: application/grpc' \
    -H 'te: trailers' "$url/api.RetryPolicyService/GetRetryPolicy" >"$tmp/h2load.out"
  after="$(cpu)"
  grep -q ' 0 failed, 0 errored' "$tmp/h2load.out" || { cat "$tmp/h2load.out" >&2; echo "bench-grpc-rate.sh: errors" >&2; exit 1; }
  n="$(awk '/^requests:/ {print $8}' "$tmp/h2load.out")"
  printf '%-24s %8s calls  %6s us CPU/call\n' "$spec" "$n" \
    "$(awk -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')"
done
