#!/usr/bin/env bash
# Builds what is shipped (docs/install.md):
#
#   scripts/release.sh VERSION
#
# into dist/ (or $DIST_DIR):
#   retryctl-VERSION-x86_64-unknown-linux-gnu.tar.gz
#       the static binary, completions for every shell, a man page per command
#       (man/retryctl-COMMAND.1), README.md and LICENSE, in
#       retryctl-VERSION-x86_64-unknown-linux-gnu/ (the archive is named after the target)
#   SHA256SUMS   its checksum (`sha256sum -c SHA256SUMS`)
#   retryctl     the same binary, for the Dockerfile's COPY
#
# The binary is the `dist` profile (Cargo.toml: release, fat LTO, stripped) linked statically
# against glibc (`-C target-feature=+crt-static`): it needs no shared library and runs in an
# empty root directory (scripts/test-dist.sh checks it). The flag is given here, with an
# explicit `--target`, rather than in .cargo/config.toml, so that it reaches neither the dev
# and test builds nor the build scripts and proc-macros (which cannot be static). Uses only
# the installed x86_64-unknown-linux-gnu target and glibc's static libraries (Debian's
# libc6-dev ships libc.a). The man pages are the repository's man/, generated from the command
# line by clap_mangen and kept current by a test (tests/integration/completion.rs), as the
# completions are: the binary does not carry the generator.
#
# VERSION must be Cargo.toml's version (a leading `v` is allowed): `retryctl version` prints
# that one. Cargo's own variables apply (CARGO_TARGET_DIR, CARGO_BUILD_JOBS).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ]; then
  echo "usage: scripts/release.sh VERSION" >&2
  exit 2
fi
version="${1#v}"
crate_version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)"
if [ "$version" != "$crate_version" ]; then
  echo "release.sh: VERSION $version is not Cargo.toml's version $crate_version (what \`retryctl version\` prints): change Cargo.toml first" >&2
  exit 2
fi

target=x86_64-unknown-linux-gnu
name="retryctl-$version-$target"
target_dir="${CARGO_TARGET_DIR:-target}"
dist="${DIST_DIR:-dist}"
max_bytes=20000000

RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build --locked --profile dist --target "$target" --bin retryctl
bin="$target_dir/$target/dist/retryctl"

# Static: no program interpreter, no shared library needed.
if readelf -lW "$bin" | grep -q 'program interpreter' || readelf -dW "$bin" | grep -q '(NEEDED)'; then
  echo "release.sh: $bin is dynamically linked:" >&2
  readelf -dW "$bin" | grep '(NEEDED)' >&2 || true
  exit 1
fi
size="$(stat -c %s "$bin")"
if [ "$size" -gt "$max_bytes" ]; then
  echo "release.sh: $bin is $size bytes, over $max_bytes" >&2
  exit 1
fi

rm -rf "${dist:?}/$name" "$dist/$name.tar.gz" "$dist/SHA256SUMS" "$dist/retryctl"
mkdir -p "$dist/$name/completions"
stage="$dist/$name"
install -m 0755 "$bin" "$stage/retryctl"
install -m 0755 "$bin" "$dist/retryctl"
# The same file names as completions/ in the repository.
"$bin" completion bash >"$stage/completions/retryctl.bash"
"$bin" completion zsh >"$stage/completions/_retryctl"
"$bin" completion fish >"$stage/completions/retryctl.fish"
"$bin" completion powershell >"$stage/completions/_retryctl.ps1"
"$bin" completion elvish >"$stage/completions/retryctl.elv"
mkdir -p "$stage/man"
install -m 0644 man/*.1 "$stage/man/"
install -m 0644 README.md LICENSE "$stage/"

# The same bytes for the same commit: entries sorted, owned by root, dated by the commit.
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
  -C "$dist" -cf - "$name" | gzip -9n >"$dist/$name.tar.gz"
(cd "$dist" && sha256sum "$name.tar.gz" >SHA256SUMS)

echo "$dist/$name.tar.gz ($(stat -c %s "$dist/$name.tar.gz") bytes; binary $size bytes)"
cat "$dist/SHA256SUMS"
