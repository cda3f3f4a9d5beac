#!/usr/bin/env bash
# The node bed's NetworkPolicy enforcer: kube-router's network policy
# controller (iptables and ipset), built from its Go module into
# ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/kube-router-<version>/ and skipped
# when there. Only its firewall runs on the bed (--run-firewall; no BGP
# routing, no service proxy: the bridge CNI plugin and kube-proxy keep
# those jobs). hack/testbed/build.sh calls it; up.sh starts it.
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
KUBE_ROUTER_VERSION=${KUBE_ROUTER_VERSION:-v2.1.0}
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
D=$CACHE/kube-router-$KUBE_ROUTER_VERSION
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
  log "kube-router-$KUBE_ROUTER_VERSION cached"
else
  log "building kube-router $KUBE_ROUTER_VERSION (cold: ~4 minutes)"
  mkdir -p "$D"
  GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN=$D \
    go install -trimpath "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
fi
echo "$D"
