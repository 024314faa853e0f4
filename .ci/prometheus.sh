#!/usr/bin/env bash
# Install Debian's Prometheus (if needed) for the load-source tests, which start their own
# instance on a loopback port; nothing is started here. Idempotent, non-interactive, root only.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if command -v prometheus >/dev/null || [ -x /usr/bin/prometheus ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "prometheus.sh: must run as root (installs a package)" >&2
  exit 1
fi
apt-get install -y -qq --no-install-recommends prometheus >&2 || {
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends prometheus >&2
}
# the package may have started its own service (it listens on :9090, all addresses): stop it
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus || true
fi
pkill -x prometheus 2>/dev/null || true
