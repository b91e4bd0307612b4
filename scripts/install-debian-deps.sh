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
# crun: the podman preset's OCI runtime (podman-runsc uses runsc from above);
# e2fsprogs (mkfs.ext4): sized workspaces; firejail + systemd-container (systemd-nspawn): the firejail and nspawn presets;
# socat + ripgrep: the srt presets (docs/presets.md; runsc-do and bwrap-cli use runsc and bubblewrap from above);
# chromium: the matrix's HTML is rendered in a real browser by its test and scripts/matrix-screenshot.ts.
pkgs="python3 bubblewrap util-linux iproute2 tcpdump iptables docker.io runsc libxml2-utils podman catatonit crun e2fsprogs firejail systemd-container socat ripgrep chromium"
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
echo "installed: $pkgs"

# The npm-distributed sandbox CLIs of the presets, each in a private prefix under the package (never global; srt's
# Node 22 comes as the node@22 package into its own prefix, the project's Node is untouched). Versions as measured.
if command -v npm >/dev/null 2>&1; then
  root=$(cd "$(dirname "$0")/.." && pwd)
  npm install --prefix "$root/.presets/codex" --no-audit --no-fund --loglevel=error @openai/codex@0.171.0 >/dev/null
  npm install --prefix "$root/.presets/srt" --no-audit --no-fund --loglevel=error @anthropic-ai/sandbox-runtime@0.0.78 node@22 >/dev/null
  echo "installed: @openai/codex@0.171.0 in .presets/codex; @anthropic-ai/sandbox-runtime@0.0.78 and node@22 in .presets/srt"
else
  echo "install-debian-deps: npm not found: the codex and srt presets stay unavailable" >&2
fi
