#!/usr/bin/env bash
# Load test for `retryctl serve` on loopback with wrk (Debian package `wrk`).
#
# Measures GET /v1/retry-policy/{name}, POST /v1/retry-policy (unique names, one SQLite
# transaction each) and PUT /v1/retry-policy/{name} with `If-Match` (each connection sends
# the ETag of its previous answer, so every PUT is a real versioned write that must not 412)
# against the `profiling` build (release with line tables) with a database file, request log on. wrk and the server share
# the machine, so the numbers are a floor for the server alone.
# Bars (docs/reference/bars.md): >= 10,000 GET/s, >= 1,000 writes/s, p99 < 10 ms, zero errors.
#
# Usage: scripts/load.sh [DURATION_SECONDS (default 5)] [CONNECTIONS (default 16)]
#   BIN=path/to/retryctl scripts/load.sh ...   measures another build (e.g. an older commit);
#   a server without versions answers the PUT route without ETags (then If-Match is empty).
# Runs briefly on purpose: the machine is shared.
set -euo pipefail

cd "$(dirname "$0")/.."
duration="${1:-5}"
conns="${2:-16}"
command -v wrk >/dev/null || { echo "load.sh: wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }
bin="${BIN:-target/profiling/retryctl}"
[ -x "$bin" ] || cargo build --profile profiling --locked

tmp="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

"$bin" serve --listen 127.0.0.1:0 --db "$tmp/armada.db" 2>"$tmp/server.log" &
server_pid=$!
for _ in $(seq 50); do grep -q 'listening on' "$tmp/server.log" 2>/dev/null && break; sleep 0.1; done
url="$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/server.log" | head -1)"
[ -n "$url" ] || { echo "load.sh: server did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }

curl -fsS -XPOST "$url/v1/retry-policy" -H "Content-Type: application/json" \
  -d '{"name":"bench","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom","mutate":{"resources":{"memory":{"factor":1.5}}}},{"action":"Retry","onCategory":"gpu","onSubcategory":"transient","mutate":{"affinity":{"avoidSameNode":true}}}]}' >/dev/null

cat >"$tmp/post.lua" <<'LUA'
-- Each wrk thread posts policies with names unique to it (t<thread>-<n>).
local counter = 0
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
function request()
  counter = counter + 1
  local name = "t" .. tid .. "-" .. counter
  local body = '{"name":"' .. name .. '","retryLimit":2,"defaultAction":"Retry","rules":[{"action":"Retry","onCategory":"oom"}]}'
  return wrk.format("POST", "/v1/retry-policy", {["Content-Type"] = "application/json"}, body)
end
LUA

# PUT with If-Match: one connection per wrk thread (-c equal to -t), each thread on its own
# policy `put-<thread>`, sending the ETag of its previous answer: sequential per policy, so a
# 412 would be a server bug, counted as an error (Non-2xx).
cat >"$tmp/put.lua" <<'LUA'
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
function init(args)
  name = "put-" .. tid
  etag = nil
  n = 0
end
function request()
  n = n + 1
  local body = '{"name":"' .. name .. '","retryLimit":' .. (n % 7 + 1) .. ',"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"}]}'
  local headers = {["Content-Type"] = "application/json"}
  if etag then headers["If-Match"] = etag end
  return wrk.format("PUT", "/v1/retry-policy/" .. name, headers, body)
end
function response(status, headers, body)
  etag = headers["ETag"] or headers["etag"]
end
LUA

run() {
  local label="$1"; shift
  echo "== $label"
  wrk "$@" | tee "$tmp/out"
  if grep -q 'Non-2xx\|Socket errors' "$tmp/out"; then echo "load.sh: $label had errors" >&2; status=1; fi
}

status=0
echo "machine: $(nproc) cores; server: $bin; wrk -t2 -c$conns -d${duration}s"
run "GET /v1/retry-policy/bench" -t2 -c"$conns" -d"${duration}s" --latency "$url/v1/retry-policy/bench"
run "GET /v1/retry-policies (1 policy)" -t2 -c"$conns" -d"${duration}s" --latency "$url/v1/retry-policies"
run "POST /v1/retry-policy (unique names)" -t2 -c"$conns" -d"${duration}s" --latency -s "$tmp/post.lua" "$url"
for t in 0 1; do
  curl -fsS -XPOST "$url/v1/retry-policy" -H "Content-Type: application/json" \
    -d '{"name":"put-'"$t"'","retryLimit":1,"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"}]}' >/dev/null
done
run "PUT /v1/retry-policy/{name} with If-Match (2 connections, one policy each)" -t2 -c2 -d"${duration}s" --latency -s "$tmp/put.lua" "$url"
echo "request log lines: $(grep -c 'retryctl serve: ' "$tmp/server.log")"
exit "$status"
