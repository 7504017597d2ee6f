#!/usr/bin/env bash
# The gRPC code generated from proto/ (build.rs with `--features grpc-codegen`), checked in under
# src/armada_api/generated/ so that a build does not compile a protobuf compiler to write the
# same code again (BENCHMARKS.md "Build time").
#
#   scripts/gen-grpc.sh          write it again after a change to proto/, with the protos' digest
#                                (src/armada_api/generated/PROTOS.sha256, which a test checks)
#   scripts/gen-grpc.sh --check  fail when the checked-in code is not what the generator writes
#                                (.ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
digest() { cat proto/submit.proto proto/upstream/health.proto | sha256sum | cut -d' ' -f1; }
record="src/armada_api/generated/PROTOS.sha256"
if [ "${1:-}" = "--check" ]; then
  # build.rs fails the build, naming the files, when what it writes differs.
  cargo check --locked --lib --features grpc-codegen
  [ "$(cut -d' ' -f1 "$record")" = "$(digest)" ] || {
    echo "error: $record is not the digest of proto/: run scripts/gen-grpc.sh" >&2
    exit 1
  }
else
  RETRYCTL_WRITE_GENERATED=1 cargo check --locked --lib --features grpc-codegen
  echo "$(digest)  proto/submit.proto + proto/upstream/health.proto" > "$record"
fi
