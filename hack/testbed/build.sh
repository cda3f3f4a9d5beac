#!/usr/bin/env bash
# Builds the node bed (a single-node Kubernetes) from Go modules and Debian
# packages only (no registry, no release downloads): the Kubernetes
# components and etcd (through hack/kube/build.sh), containerd, runc, the CNI
# plugins, gVisor's runsc with its containerd shim, CoreDNS (coredns.sh) and
# kube-router's NetworkPolicy controller (kube-router.sh).
# Each component lands in ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/<name>-<version>/
# and is skipped when present. Prints the bin directory on its last line.
#
# usage: hack/testbed/build.sh           # build what is missing
#        hack/testbed/build.sh --print   # only print the bin dir
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
RUNC_VERSION=${RUNC_VERSION:-$("$HERE/../local/deps.sh" --runc-version)}  # one runc for the bed and the local engine
CNI_VERSION=${CNI_VERSION:-v1.10.0}
# gVisor publishes no tagged module versions: a pseudo-version of its go branch.
GVISOR_VERSION=${GVISOR_VERSION:-v0.0.0-20260905035102-160fafc42237}
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
BIN=$CACHE/testbed-k8s${K8S_VERSION}-containerd${CONTAINERD_VERSION}-runc${RUNC_VERSION}-cni${CNI_VERSION}-gvisor${GVISOR_VERSION##*-}

if [ "${1:-}" = --print ]; then echo "$BIN"; exit 0; fi
# One build at a time: `make test` starts one in the background
# (node-bed-prebuild), and the build of `make e2e` waits for it here, then
# finds everything cached.
mkdir -p "$CACHE"
exec 9>"$CACHE/.node-bed-build.lock"
flock 9
export GOFLAGS=-mod=mod GOWORK=off
log() { echo "[$(date +%T)] $*" >&2; }

apt_packages() {
  # iptables: the bridge CNI plugin's masquerading and kube-proxy;
  # libseccomp-dev: runc's seccomp build tag; busybox-static: image root fs;
  # openssl: the bed's certificates; conntrack: kube-proxy.
  local need=()
  command -v iptables >/dev/null || need+=(iptables)
  command -v busybox >/dev/null && busybox --list >/dev/null 2>&1 && [ -f /bin/busybox ] || need+=(busybox-static)
  [ -f /usr/include/seccomp.h ] || need+=(libseccomp-dev)
  command -v openssl >/dev/null || need+=(openssl)
  command -v curl >/dev/null || need+=(curl)
  command -v pkg-config >/dev/null || need+=(pkg-config)
  if [ ${#need[@]} -gt 0 ]; then
    log "apt: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
  fi
}

# install_into DIR ENV... -- GO-INSTALL-ARGS: `go install` into DIR unless every
# named binary is already there.
install_into() {
  local d=$1; shift
  local bins=() env=()
  while [ "$1" != -- ]; do bins+=("$1"); shift; done; shift
  local b missing=0
  for b in "${bins[@]}"; do [ -x "$d/$b" ] || missing=1; done
  [ $missing = 0 ] && { log "$(basename "$d") cached"; return; }
  log "building $(basename "$d")"
  mkdir -p "$d"
  GOBIN=$d go install -trimpath "$@"
}

build_gvisor() {
  local d=$CACHE/gvisor-$GVISOR_VERSION
  if [ -x "$d/runsc" ] && [ -x "$d/containerd-shim-runsc-v1" ]; then log "gvisor cached"; return; fi
  log "building gvisor runsc + containerd-shim-runsc-v1 (cold: ~5 minutes)"
  mkdir -p "$d"
  CGO_ENABLED=0 GOBIN=$d go install -trimpath "gvisor.dev/gvisor/runsc@$GVISOR_VERSION"
  # The stock shim fails when it cannot set oom_score_adj=-999, which needs
  # CAP_SYS_RESOURCE (dropped on this kind of VM): build it from a copy of the
  # same module with that failure ignored. It must not log: the shim's stdout
  # carries its bootstrap JSON.
  local src
  src=$(go mod download -json "gvisor.dev/gvisor@$GVISOR_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  rm -rf "$d/src"; cp -r "$src" "$d/src"; chmod -R u+w "$d/src"
  local f=$d/src/pkg/shim/v1/manager.go
  local old='return shim.BootstrapParams{}, fmt.Errorf("failed to set OOM Score on shim: %w", err)'
  grep -qF "$old" "$f" || { echo "gvisor shim patch does not apply to $f" >&2; exit 1; }
  python3 - "$f" "$old" <<'PY'
import sys
path, old = sys.argv[1], sys.argv[2]
src = open(path).read()
open(path, "w").write(src.replace(old, "_ = err // sandpod test bed: tolerate a missing CAP_SYS_RESOURCE"))
PY
  (cd "$d/src" && CGO_ENABLED=0 go build -trimpath -o "$d/containerd-shim-runsc-v1.tmp" ./shim)
  mv "$d/containerd-shim-runsc-v1.tmp" "$d/containerd-shim-runsc-v1"
  rm -rf "$d/src"
}

apt_packages
KUBE_BIN=$("$HERE/../kube/build.sh" | tail -1)
K=$CACHE/kubernetes-$K8S_VERSION
CTRD=$CACHE/containerd-$CONTAINERD_VERSION
install_into "$CTRD" containerd ctr -- -tags "no_btrfs urfave_cli_no_docs" \
  "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION"
CGO_ENABLED=0 install_into "$CTRD" containerd-shim-runc-v2 -- -tags "no_grpc urfave_cli_no_docs" \
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
CNI=$CACHE/cni-plugins-$CNI_VERSION
CGO_ENABLED=0 install_into "$CNI" bridge loopback host-local portmap -- \
  "github.com/containernetworking/plugins/plugins/main/bridge@$CNI_VERSION" \
  "github.com/containernetworking/plugins/plugins/main/loopback@$CNI_VERSION" \
  "github.com/containernetworking/plugins/plugins/ipam/host-local@$CNI_VERSION" \
  "github.com/containernetworking/plugins/plugins/meta/portmap@$CNI_VERSION"
build_gvisor
"$HERE/coredns.sh" >/dev/null   # cluster DNS (hack/testbed/dns.sh runs it)
KUBE_ROUTER=$("$HERE/kube-router.sh" | tail -1)   # the NetworkPolicy enforcer
"$HERE/csi.sh" build   # the CSI driver and snapshot components (into their own cache dirs)

mkdir -p "$BIN/cni"
for c in kube-apiserver kubelet kube-controller-manager kube-scheduler kube-proxy kubectl; do ln -sf "$K/$c" "$BIN/$c"; done
ln -sf "$KUBE_BIN/etcd" "$BIN/etcd"
for c in containerd ctr containerd-shim-runc-v2; do ln -sf "$CTRD/$c" "$BIN/$c"; done
RUNC_VERSION=$RUNC_VERSION "$HERE/../local/deps.sh" "$BIN"   # builds runc once, links $BIN/runc
for c in runsc containerd-shim-runsc-v1; do ln -sf "$CACHE/gvisor-$GVISOR_VERSION/$c" "$BIN/$c"; done
for c in bridge loopback host-local portmap; do ln -sf "$CNI/$c" "$BIN/cni/$c"; done
ln -sf "$KUBE_ROUTER/kube-router" "$BIN/kube-router"
echo "$BIN"
