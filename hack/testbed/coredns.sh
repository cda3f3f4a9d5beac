#!/usr/bin/env bash
# Builds the node bed's cluster DNS: CoreDNS from its Go module
# (github.com/coredns/coredns), with only the plugins the bed needs
# (hack/testbed/coredns/main.go: kubernetes, cache, errors, health, ready),
# static, into ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/coredns-<version>/.
# Skipped when there. hack/testbed/build.sh calls it; hack/testbed/dns.sh
# runs it on the bed. The version is the one hack/testbed/coredns/go.mod
# requires.
#
# A cold build (empty Go module and build caches) took 19m34s on 2 cores
# shared with other builds (load ~30; 163 s of user CPU, so a few minutes on
# an idle machine). coredns/go.mod requires the Kubernetes, gRPC and x/
# modules at the root go.mod's versions, so their downloads are shared, and
# so are their compiled packages once hack/testbed/images.sh has built the
# sandpod image (same flags): then it is 42 s of user CPU.
#
# usage: hack/testbed/coredns.sh           # build if missing, print the binary
#        hack/testbed/coredns.sh --print   # only print the binary's path
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
VERSION=$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" {print $3}' "$HERE/coredns/go.mod")
[ -n "$VERSION" ] || { echo "coredns.sh: no coredns version in $HERE/coredns/go.mod" >&2; exit 1; }
D=$CACHE/coredns-$VERSION
if [ "${1:-}" = --print ]; then echo "$D/coredns"; exit 0; fi
source "$HERE/../local/progress.sh"
if [ ! -x "$D/coredns" ]; then
  echo "[$(ts)] building coredns $VERSION from its Go module into $D (once)" >&2
  mkdir -p "$D"
  # -X: what `coredns -version` prints. CGO off: the bed's image carries no
  # C library.
  (cd "$HERE/coredns" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
    with_progress "building coredns $VERSION" "it downloads and compiles its module once, a few minutes on 2 cores" \
    go build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=sandpod-testbed" \
    -o "$D/coredns.tmp" .)
  mv "$D/coredns.tmp" "$D/coredns"
fi
echo "$D/coredns"
