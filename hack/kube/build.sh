#!/usr/bin/env bash
# Builds the kwok bed from Go modules only (no release downloads):
#   kube-apiserver (k8s.io/kubernetes, built with the other Kubernetes components), etcd (go.etcd.io/etcd/server/v3), kwok (sigs.k8s.io/kwok).
# Each lands in ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/<component>-<version>/ and is skipped when present.
# Prints the bin directory to use as SANDPOD_KUBE_BIN on its last line.
#
# usage: hack/kube/build.sh            # build what is missing
#        hack/kube/build.sh --print    # only print the bin dir (no build)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
BIN=$CACHE/bin-k8s${K8S_VERSION}-etcd${ETCD_VERSION}-kwok${KWOK_VERSION}

if [ "${1:-}" = --print ]; then echo "$BIN"; exit 0; fi
export GOFLAGS=-mod=mod GOWORK=off
log() { echo "[$(date +%T)] $*" >&2; }

# build_in DIR NAME: run in a scratch module dir; output binary $DIR/NAME (atomic rename).
# build_kubernetes: kube-apiserver, kubelet, kube-controller-manager, kubectl,
# kube-scheduler and kube-proxy in one `go build` from a scratch module that
# requires k8s.io/kubernetes and pins each staging module to its release.
# The kwok bed needs only kube-apiserver; the node bed (hack/testbed)
# needs them all, and one build shares the compile work.
KUBE_COMPONENTS="kube-apiserver kubelet kube-controller-manager kube-scheduler kube-proxy kubectl"
build_kubernetes() {
  local d=$CACHE/kubernetes-$K8S_VERSION missing=0 c
  for c in $KUBE_COMPONENTS; do [ -x "$d/$c" ] || missing=1; done
  [ $missing = 0 ] && { log "kubernetes $K8S_VERSION cached"; return; }
  log "building kubernetes $K8S_VERSION components (cold: ~20 minutes on 2 cores)"
  local w=$d/src; mkdir -p "$w"; cd "$w"
  if [ ! -f go.mod ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" go.mod; then
    rm -f go.mod go.sum
    go mod init testbed.local/kubernetes >/dev/null 2>&1
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
    local staging=v0${K8S_VERSION#v1}
    for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod"); do
      go mod edit -replace "$m=$m@$staging"
    done
    go mod edit -require "k8s.io/kubernetes@$K8S_VERSION"
    { printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for c in $KUBE_COMPONENTS; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
      printf ')\n'; } > tools.go
    go mod tidy
  fi
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local ldf="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  mkdir -p "$d/tmp"
  go build -trimpath -ldflags "$ldf" -o "$d/tmp/" $(for c in $KUBE_COMPONENTS; do echo "k8s.io/kubernetes/cmd/$c"; done)
  for c in $KUBE_COMPONENTS; do mv "$d/tmp/$c" "$d/$c"; done
  rmdir "$d/tmp"
  log "kubernetes done"
}

build_etcd() {
  local d=$CACHE/etcd-$ETCD_VERSION
  [ -x "$d/etcd" ] && { log "etcd $ETCD_VERSION cached"; return; }
  log "building etcd $ETCD_VERSION"
  # server/v3's go.mod has replace directives, so `go install ...@version` is refused: scratch module.
  local w=$d/src; mkdir -p "$w"; cd "$w"
  if [ ! -f go.mod ]; then
    go mod init testbed.local/etcd >/dev/null 2>&1
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go mod tidy
  fi
  go build -trimpath -ldflags "-s -w" -o "$d/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$d/etcd.tmp" "$d/etcd"
  log "etcd done"
}

build_kwok() {
  local d=$CACHE/kwok-$KWOK_VERSION
  [ -x "$d/kwok" ] && { log "kwok $KWOK_VERSION cached"; return; }
  log "building kwok $KWOK_VERSION"
  local w=$d/src; mkdir -p "$w"; cd "$w"
  if [ ! -f go.mod ]; then
    go mod init testbed.local/kwok >/dev/null 2>&1
    printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' > tools.go
    go get "sigs.k8s.io/kwok@$KWOK_VERSION"
    go mod tidy
  fi
  go build -trimpath -ldflags "-s -w" -o "$d/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok
  mv "$d/kwok.tmp" "$d/kwok"
  log "kwok done"
}

# kwok_stages: the "fast" node and pod stages from the kwok module, one file.
kwok_stages() {
  local d=$CACHE/kwok-$KWOK_VERSION
  [ -s "$d/stages.yaml" ] && return
  local src
  src=$(cd "$d/src" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  { for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      cat "$src/kustomize/stage/$f"; echo "---"; done; } > "$d/stages.yaml.tmp"
  mv "$d/stages.yaml.tmp" "$d/stages.yaml"
}

mkdir -p "$CACHE"
build_etcd
build_kwok
kwok_stages
build_kubernetes
mkdir -p "$BIN"
ln -sf "$CACHE/kubernetes-$K8S_VERSION/kube-apiserver" "$BIN/kube-apiserver"
ln -sf "$CACHE/etcd-$ETCD_VERSION/etcd" "$BIN/etcd"
ln -sf "$CACHE/kwok-$KWOK_VERSION/kwok" "$BIN/kwok"
ln -sf "$CACHE/kubernetes-$K8S_VERSION/kubectl" "$BIN/kubectl"   # for deploy/uninstall.sh in tests/k8s
ln -sf "$CACHE/kwok-$KWOK_VERSION/stages.yaml" "$BIN/kwok-stages.yaml"
echo "$BIN"
