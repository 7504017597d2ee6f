#!/usr/bin/env bash
# The Python virtualenv of the tests that run upstream's own client (PyPI armada-client, its
# generated protobuf classes and gRPC stubs): test-venv in the target directory
# ($CARGO_TARGET_DIR, else target/), made once, reused after. The tests make it themselves
# on first use (tests/integration/support/python.rs, the same steps and lock); .ci/run runs
# this first so that a failure to make it is reported before the build.
set -euo pipefail
cd "$(dirname "$0")/.."
# PyYAML: a YAML 1.1 reader (as go-yaml, kubectl's and armadactl's) for the test that no
# message text injects YAML into `suggest -o policy` (tests/integration/suggest.rs).
# jsonschema: the reference JSON Schema validator (draft 2020-12) for the tests that
# `retryctl schema` describes what `validate` accepts (tests/integration/support/json_schema.rs).
packages=('armada-client==0.5.1' 'PyYAML==6.0.2' 'jsonschema==4.23.0')
target="${CARGO_TARGET_DIR:-target}"
venv="$target/test-venv"
works() { "$venv/bin/python3" -c 'import armada_client.armada.submit_pb2_grpc, yaml, jsonschema' 2>/dev/null; }
works && exit 0
mkdir -p "$target"
# Racing test processes (and another run of this script) wait here; whoever builds does it
# in a directory of its own, renamed into place only when finished.
exec 9>"$target/test-venv.lock"
flock 9
works && exit 0
rm -rf "$target"/test-venv.tmp.*
building="$target/test-venv.tmp.$$"
python3 -m venv "$building"
"$building/bin/python3" -m pip install --quiet --disable-pip-version-check "${packages[@]}"
"$building/bin/python3" -c 'import armada_client.armada.submit_pb2_grpc, yaml, jsonschema'
rm -rf "$venv"
mv "$building" "$venv"
works
