#!/usr/bin/env bash
# Tests what scripts/release.sh ships (docs/install.md), outside `cargo test` because it needs
# the `dist` build (fat LTO: minutes on 2 cores):
#
#   scripts/test-dist.sh            # builds with scripts/release.sh first (a no-op when built)
#
# - SHA256SUMS checks; the archive holds exactly the binary, the completions of every shell
#   (the same bytes as completions/ in the repository), the man pages (those of man/: one per
#   command), README.md and LICENSE, and its binary is the one built;
# - the binary is static (no interpreter, no NEEDED entry; `ldd`: not a dynamic executable)
#   and at most 20 MB;
# - it runs in an empty root directory (chroot: no /lib, no /etc): `validate`, and TLS to a
#   `retryctl serve` on 127.0.0.1 with a certificate of a private CA, trusted through
#   `--certificate-authority` and through `SSL_CERT_FILE`, refused without either (no system
#   roots there, the built-in ones do not hold it: exit 4), and with no HOME at all; then a
#   name: none without /etc, localhost once /etc/hosts names it.
#
# Needs root (chroot) and openssl (the test certificate). Cargo's variables apply.
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)"
name="retryctl-$version-x86_64-unknown-linux-gnu"
dist="${DIST_DIR:-dist}"
export DIST_DIR="$dist"
max_bytes=20000000

fail() {
  echo "test-dist: FAIL: $*" >&2
  exit 1
}
if [ "$(id -u)" -ne 0 ]; then
  fail "needs root (chroot into an empty directory)"
fi

scripts/release.sh "$version"

work="$(mktemp -d)"
serve_pid=
cleanup() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== checksums and contents"
(cd "$dist" && sha256sum -c SHA256SUMS) || fail "SHA256SUMS does not check"
expected="$name/
$name/LICENSE
$name/README.md
$name/completions/
$name/completions/_retryctl
$name/completions/_retryctl.ps1
$name/completions/retryctl.bash
$name/completions/retryctl.elv
$name/completions/retryctl.fish
$(cd man && printf '%s\n' "$name/man/" *.1 | sed "2,\$s|^|$name/man/|")
$name/retryctl"
expected="$(printf '%s\n' "$expected" | sort)"
actual="$(tar -tzf "$dist/$name.tar.gz" | sort)"
[ "$actual" = "$expected" ] || fail "archive contents:
$actual
expected:
$expected"
tar -xzf "$dist/$name.tar.gz" -C "$work"
x="$work/$name"
cmp "$x/retryctl" "$dist/retryctl" || fail "the archive's binary is not dist/retryctl"
cmp "$x/README.md" README.md || fail "README.md differs"
cmp "$x/LICENSE" LICENSE || fail "LICENSE differs"
for f in _retryctl _retryctl.ps1 retryctl.bash retryctl.elv retryctl.fish; do
  cmp "$x/completions/$f" "completions/$f" || fail "completions/$f differs from the repository's"
done
pages=0
for f in man/*.1; do
  cmp "$x/$f" "$f" || fail "$f differs from the repository's"
  pages=$((pages + 1))
done
[ "$pages" -gt 1 ] || fail "no man pages in man/"
[ -x "$x/retryctl" ] || fail "the binary is not executable"

echo "== static, size"
bin="$x/retryctl"
size="$(stat -c %s "$bin")"
echo "binary: $size bytes"
[ "$size" -le "$max_bytes" ] || fail "$size bytes, over $max_bytes"
if readelf -lW "$bin" | grep -q 'program interpreter'; then fail "has a program interpreter"; fi
if readelf -dW "$bin" | grep -q '(NEEDED)'; then fail "needs shared libraries"; fi
if command -v ldd >/dev/null; then
  ldd_out="$(ldd "$bin" 2>&1 || true)"
  echo "ldd: $ldd_out"
  case "$ldd_out" in
    *"not a dynamic executable"* | *"statically linked"*) ;;
    *) fail "ldd: $ldd_out" ;;
  esac
fi

echo "== an empty root"
# With an empty environment but HOME=/, as Docker and Kubernetes give a container: nothing
# of the caller's (ARMADA_URL, its HOME) reaches it. (Without any HOME no config file is read:
# --armada-url is enough, and what would need ~/.armadactl.yaml says so, exit 2.)
chroot_bin="$(command -v chroot)"
in_root() {
  env -i HOME=/ "$@"
}
root="$work/root"
mkdir -p "$root"
cp "$bin" "$root/retryctl"
cp testdata/policies/valid/infra.yaml "$root/infra.yaml"
[ "$(find "$root" -mindepth 1 | wc -l)" -eq 2 ] || fail "the root is not empty"
in_root "$chroot_bin" "$root" /retryctl version --client || fail "version in the empty root"
in_root "$chroot_bin" "$root" /retryctl validate -f /infra.yaml || fail "validate in the empty root"

echo "== TLS from the empty root to serve on 127.0.0.1"
# A private CA and a leaf for 127.0.0.1 it signs (the server's chain), made now: no key is
# checked in.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj "/CN=retryctl test-dist CA" -keyout "$work/ca.key" -out "$root/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$work/key.pem" -out "$work/leaf.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$work/leaf.ext"
openssl x509 -req -in "$work/leaf.csr" -CA "$root/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -CAserial "$work/ca.srl" \
  -days 2 -extfile "$work/leaf.ext" -out "$work/cert.pem" 2>/dev/null
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$bin" serve --listen "127.0.0.1:$port" --in-memory --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
  2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 100); do
  grep -q 'listening' "$work/serve.log" && break
  sleep 0.1
done
grep -q 'listening' "$work/serve.log" || fail "serve did not start: $(cat "$work/serve.log")"
url="https://127.0.0.1:$port"
in_root "$chroot_bin" "$root" /retryctl --armada-url "$url" --certificate-authority /ca.pem create -f /infra.yaml \
  || fail "create over TLS with --certificate-authority"
in_root "$chroot_bin" "$root" /retryctl --armada-url "$url" --certificate-authority /ca.pem get retrypolicies \
  || fail "get over TLS with --certificate-authority"
in_root SSL_CERT_FILE=/ca.pem "$chroot_bin" "$root" /retryctl --armada-url "$url" get retrypolicy infra -o name \
  || fail "get over TLS with SSL_CERT_FILE"
set +e
in_root "$chroot_bin" "$root" /retryctl --armada-url "$url" get retrypolicies 2>"$work/untrusted.err"
code=$?
set -e
[ "$code" -eq 4 ] || fail "an untrusted server: exit $code, expected 4: $(cat "$work/untrusted.err")"
echo "untrusted (as expected): $(head -n1 "$work/untrusted.err")"
# No HOME at all (a container whose image sets none): no config file is read, and the server
# given is all the command needs; without one it says that $HOME is not set (exit 2).
env -i "$chroot_bin" "$root" /retryctl --armada-url "$url" --certificate-authority /ca.pem get retrypolicy infra -o name \
  || fail "get without HOME"
set +e
env -i "$chroot_bin" "$root" /retryctl get retrypolicies 2>"$work/nohome.err"
code=$?
set -e
[ "$code" -eq 2 ] && grep -q '`$HOME` is not set' "$work/nohome.err" \
  || fail "no HOME and no server: exit $code, expected 2 saying \$HOME is not set: $(cat "$work/nohome.err")"

echo "== a name, from /etc/hosts (glibc's files source is inside the static libc)"
set +e
in_root "$chroot_bin" "$root" /retryctl --armada-url "https://localhost:$port" --certificate-authority /ca.pem \
  get retrypolicies >/dev/null 2>"$work/nohosts.err"
code=$?
set -e
[ "$code" -eq 4 ] || fail "localhost without /etc/hosts: exit $code, expected 4: $(cat "$work/nohosts.err")"
mkdir "$root/etc"
echo "127.0.0.1 localhost" >"$root/etc/hosts"
in_root "$chroot_bin" "$root" /retryctl --armada-url "https://localhost:$port" --certificate-authority /ca.pem \
  get retrypolicy infra -o name || fail "localhost through /etc/hosts"

echo "test-dist: OK ($name.tar.gz, binary $size bytes, static, runs in an empty root, TLS by IP)"
