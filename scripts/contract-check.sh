#!/usr/bin/env bash
# Contract check: schemathesis (from PyPI, in a virtualenv under this script's own temp dir)
# against a running `retryctl serve --in-memory`, with upstream's swagger
# (contract/armada-api.swagger.json, vendored), restricted to the retry-policy and queue
# operations. Not run by CI (network + minutes of CPU).
#
# Target: no 5xx, no schema violation except the documented enum encoding
# (docs/reference/wire.md: the swagger says `RETRY_ACTION_*`, the real wire says
# `"Fail"`/`"Retry"`, and retryctl serve follows the wire). The queue stream is also
# reported (ST109: newline-delimited messages, not one JSON document), so the exit status
# is non-zero while those expected findings remain: read the summary (BENCHMARKS.md).
#
# Usage: scripts/contract-check.sh [MAX_EXAMPLES (default 50)] [SWAGGER]
set -euo pipefail

cd "$(dirname "$0")/.."
max_examples="${1:-50}"
swagger="${2:-contract/armada-api.swagger.json}"
[ -f "$swagger" ] || { echo "contract-check.sh: swagger not found: $swagger" >&2; exit 2; }

tmp="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "contract-check.sh: installing schemathesis into $tmp/venv"
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check schemathesis
"$tmp/venv/bin/schemathesis" --version

cargo build --locked --quiet
target/debug/retryctl serve --listen 127.0.0.1:0 --in-memory 2>"$tmp/server.log" &
server_pid=$!
for _ in $(seq 50); do grep -q 'listening on' "$tmp/server.log" 2>/dev/null && break; sleep 0.1; done
url="$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/server.log" | head -1)"
[ -n "$url" ] || { echo "contract-check.sh: server did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }

# Seed one policy and one queue so that reads by name also hit existing resources.
curl -fsS -XPOST -H 'Content-Type: application/json' "$url/v1/retry-policy" -d '{"name":"p1","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"}]}' >/dev/null
curl -fsS -XPOST -H 'Content-Type: application/json' "$url/v1/queue" -d '{"name":"q1","priorityFactor":1,"retryPolicies":["p1"]}' >/dev/null

status=0
swagger="$(cd "$(dirname "$swagger")" && pwd)/$(basename "$swagger")"
# schemathesis keeps a cache (.schemathesis/) in its working directory: keep it out of the repo.
cd "$tmp"
"$tmp/venv/bin/schemathesis" run "$swagger" \
  --url "$url" \
  --include-path-regex '^/v1/(retry-polic|queue(/|$)|batched/)' \
  --checks not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance \
  --max-examples "$max_examples" \
  --seed 4 \
  --workers 1 \
  --suppress-health-check all \
  --report junit --report-dir "$tmp/report" || status=$?

echo "contract-check.sh: 5xx answers in the server's request log: $(grep -c ' 5[0-9][0-9] [0-9.]*ms$' "$tmp/server.log" || true)"
exit "$status"
