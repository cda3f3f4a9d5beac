#!/usr/bin/env bash
# The node bed's NetworkPolicy enforcer: kube-router's network policy
# controller (iptables and ipset), built from its Go module into
# ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/kube-router-netpol-<version>-<src hash>/
# and skipped when there. Only the firewall is built and run: a small
# command (hack/testbed/kube-router-netpol, its own Go module) starts
# kube-router's netpol controller alone, so neither BGP routing, IPVS nor
# their dependencies (gobgp, gRPC) are compiled: about a third fewer
# packages than kube-router's own command. The bridge CNI plugin and
# kube-proxy keep their jobs. hack/testbed/build.sh calls it; up.sh starts it.
#
# Why not sigs.k8s.io/kube-network-policies: it hands packets to user space
# with the nftables "queue" expression, and the kernels of these machines
# are built without it (CONFIG_NFT_QUEUE is not set), so its rules cannot
# even be loaded. kube-router needs only what they have: the iptables xt
# matches set, physdev, comment, conntrack, addrtype, multiport, and ipset.
#
# usage: hack/testbed/kube-router.sh           # build unless cached; prints the dir
#        hack/testbed/kube-router.sh --print   # only print the dir
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/kube-router-netpol
# The version is the one go.mod requires; the hash makes a changed main.go
# rebuild.
KUBE_ROUTER_VERSION=$(awk '$1 == "github.com/cloudnativelabs/kube-router/v2" {print $2}' "$SRC/go.mod")
SUM=$(cat "$SRC/main.go" "$SRC/go.mod" "$SRC/go.sum" | sha256sum | cut -c1-8)
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
D=$CACHE/kube-router-netpol-$KUBE_ROUTER_VERSION-$SUM
if [ "${1:-}" = --print ]; then echo "$D"; exit 0; fi
log() { echo "[$(date +%T)] $*" >&2; }

# ipset: kube-router runs the ipset command (its sets hold the pods and
# blocks each policy selects).
if ! command -v ipset >/dev/null; then
  log "apt: ipset"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ipset >&2
fi
if [ -x "$D/kube-router" ]; then
  log "$(basename "$D") cached"
else
  log "building kube-router $KUBE_ROUTER_VERSION's network policy controller (cold: ~2 minutes)"
  mkdir -p "$D"
  (cd "$SRC" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath -o "$D/kube-router.tmp" .)
  mv "$D/kube-router.tmp" "$D/kube-router"
fi
echo "$D"
