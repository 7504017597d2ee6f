#!/usr/bin/env bash
# The Python virtualenv of the tests that run upstream's own client (PyPI armada-client, its
# generated protobuf classes and gRPC stubs): target/test-venv, made once, reused after.
# tests/integration/support/python.rs finds it there (or at $RETRYCTL_TEST_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/test-venv
if "$venv/bin/python3" -c 'import armada_client.armada.submit_pb2_grpc' 2>/dev/null; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'armada-client==0.5.1'
"$venv/bin/python3" -c 'import armada_client.armada.submit_pb2_grpc'
