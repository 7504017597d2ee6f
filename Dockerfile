# The shipped image: the static binary alone (docs/install.md). Build the binary first, then
# the image, from the repository root:
#
#   scripts/release.sh 0.1.0            # dist/retryctl, static (no shared library)
#   docker build -t retryctl:0.1.0 .
#   docker run --rm -v "$PWD:/work:ro" -w /work retryctl:0.1.0 validate -f policies/
#
# `FROM scratch`: no shell, no /etc, no CA bundle. retryctl needs none of them: TLS falls back
# to the Mozilla roots built into it (plus `--certificate-authority` and `SSL_CERT_FILE`).
# What the image lacks: /etc/hosts and /etc/resolv.conf for host names (Docker and Kubernetes
# mount both; the static binary reads them without NSS modules), and a home directory: Docker
# sets HOME=/, `serve` needs `--db PATH` (on a volume) or `--in-memory`, and the config file
# comes from `--config` or $ARMADACTL_CONFIG.
FROM scratch
COPY dist/retryctl /usr/local/bin/retryctl
ENV PATH=/usr/local/bin
# Non-root: the "nonroot" user of distroless images. A volume it writes to (serve's --db,
# --output-file) needs that uid or group 65532 (Kubernetes: securityContext.fsGroup: 65532).
USER 65532:65532
ENTRYPOINT ["retryctl"]
