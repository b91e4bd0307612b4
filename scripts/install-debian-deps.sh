#!/usr/bin/env bash
# Installs the Debian packages sandcheck's real backends and its lab need. Run as root.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "install-debian-deps: run as root (e.g. as root: npm run setup)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Installing docker.io must not start the system's dockerd: sandcheck starts its own, inside each run's lab.
guard=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  guard=1
fi
trap '[ -n "$guard" ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -qq >/dev/null
# python3: payloads; bubblewrap + util-linux (setpriv, nsenter, unshare): the bwrap backend;
# iproute2 + tcpdump + iptables: the lab namespace, its packet witness and filters;
# docker.io + runsc: the docker-default, docker-hardened and gvisor backends;
# libxml2-utils (xmllint): the tests validate the JUnit files against an XML Schema;
# podman + catatonit (its --init, only recommended by the package): the docker backend on Podman's API;
# chromium: the matrix's HTML is rendered in a real browser by its test and scripts/matrix-screenshot.ts.
apt-get install -y -qq --no-install-recommends python3 bubblewrap util-linux iproute2 tcpdump iptables docker.io runsc libxml2-utils podman catatonit chromium >/dev/null
echo "installed: python3 bubblewrap util-linux iproute2 tcpdump iptables docker.io runsc libxml2-utils podman catatonit chromium"
