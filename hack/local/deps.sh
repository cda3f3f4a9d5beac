#!/usr/bin/env bash
# What the local engine needs on the host, installed by the project itself:
# runc (built from its Go module with seccomp, the same build the node bed
# uses, cached in ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/runc-VERSION) and
# pasta (Debian's passt package) for sandboxes with egress, e2fsprogs
# (mkfs.ext4) for the sandboxes' disks, and Debian's
# python3-numpy and python3-matplotlib for run_code. Links runc next
# to the sandpod binary (bin/runc), where `sandpod serve` looks first.
#
# usage: hack/local/deps.sh BIN_DIR
#        hack/local/deps.sh --runc-version   # print the runc version built
set -euo pipefail
RUNC_VERSION=${RUNC_VERSION:-v1.5.3}
if [ "${1:-}" = --runc-version ]; then echo "$RUNC_VERSION"; exit 0; fi
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
BIN_DIR=${1:?usage: hack/local/deps.sh BIN_DIR}
source "$(dirname "$0")/progress.sh"
log() { echo "[$(ts)] $*" >&2; }

need=()
[ -f /usr/include/seccomp.h ] || need+=(libseccomp-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v gcc >/dev/null || need+=(gcc libc6-dev)   # runc's seccomp support is cgo
command -v pasta >/dev/null || need+=(passt)
command -v nsenter >/dev/null || need+=(util-linux)
command -v iptables >/dev/null || need+=(iptables)   # keeps egress sandboxes off the host's own addresses
# Each sandbox's disk is an ext4 image serve formats (core/engine/disk_linux.go).
command -v mkfs.ext4 >/dev/null || [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ] || need+=(e2fsprogs)
# run_code's figures: sandboxes see the host's /usr read-only, so Debian's
# python3 with numpy and matplotlib is what `sb.run_code(...)` imports.
if command -v /usr/bin/python3 >/dev/null; then
  /usr/bin/python3 -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
  /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
else
  need+=(python3-minimal python3-numpy python3-matplotlib)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "the local engine needs these Debian packages: ${need[*]} (run as root: apt-get install ${need[*]})" >&2
    exit 1
  fi
  log "installing with apt (once): ${need[*]}"
  with_progress "installing ${need[*]}" "apt-get update and install, usually under a minute" \
    apt-get update -qq
  DEBIAN_FRONTEND=noninteractive with_progress "installing ${need[*]}" "apt-get install, usually under a minute" \
    apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

dir=$CACHE/runc-$RUNC_VERSION
if [ ! -x "$dir/runc" ]; then
  log "building runc $RUNC_VERSION from its Go module into $dir (once, about a minute)"
  mkdir -p "$dir"
  GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=1 GOBIN=$dir \
    with_progress "building runc $RUNC_VERSION" "it downloads and compiles its module once, about a minute on 2 cores" \
    go install -trimpath -tags "seccomp urfave_cli_no_docs" "github.com/opencontainers/runc@$RUNC_VERSION"
fi
# pasta opens /dev/net/tun as the sandbox's unprivileged root: udev makes it
# 0666 on most machines; without udev (containers, small VMs) it stays 0600.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ] && [ "$(id -u)" = 0 ]; then
  log "chmod 0666 /dev/net/tun (as udev does) for pasta"
  chmod 0666 /dev/net/tun
fi
mkdir -p "$BIN_DIR"
ln -sf "$dir/runc" "$BIN_DIR/runc"
