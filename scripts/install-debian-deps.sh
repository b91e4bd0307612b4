#!/usr/bin/env bash
# Installs the Debian packages sandcheck's real backends and its lab need. Run as root.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "install-debian-deps: run as root (e.g. sudo npm run setup)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# python3: payloads; bubblewrap + util-linux (setpriv, nsenter, unshare): the bwrap backend;
# iproute2 + tcpdump + iptables: the lab network namespace, its packet witness and filters.
apt-get install -y -qq --no-install-recommends python3 bubblewrap util-linux iproute2 tcpdump iptables >/dev/null
echo "installed: python3 bubblewrap util-linux iproute2 tcpdump iptables"
