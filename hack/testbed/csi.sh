#!/usr/bin/env bash
# The node bed's CSI storage with snapshots, for sandpod's SandboxSnapshots:
# the external-snapshotter's CRDs (snapshot.storage.k8s.io) and
# snapshot-controller, a CSI driver (sandpod-csi-hostpath: volumes are
# directories on the node, snapshots are copies; hack/testbed/csihostpath)
# with the external-provisioner and the csi-snapshotter sidecar, all host
# processes like the rest of the bed, talking over a unix socket; the driver
# registers with kubelet through its plugins_registry itself. Objects: the
# CSIDriver, StorageClass "sandpod-csi" and VolumeSnapshotClass
# "sandpod-csi" (the default class).
#
# Everything is built from Go modules into ${SANDPOD_CACHE:-~/.cache/sandpod}/<name>-<version>/
# (skipped when there). The kubernetes-csi hostpath driver and
# node-driver-registrar are not served by the module proxy this bed builds
# from, hence sandpod's own small driver.
#
#   hack/testbed/csi.sh build            # build what is missing (build.sh calls it)
#   hack/testbed/csi.sh up  R BIN NODE   # start and apply (up.sh calls it)
#   hack/testbed/csi.sh down R           # stop (down.sh calls it, after the pods went)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SNAPSHOTTER_VERSION=${SNAPSHOTTER_VERSION:-v8.7.0}
PROVISIONER_VERSION=${PROVISIONER_VERSION:-v5.3.0}
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
SNAP=$CACHE/external-snapshotter-$SNAPSHOTTER_VERSION
PROV=$CACHE/external-provisioner-$PROVISIONER_VERSION
# The driver is built from this tree: its cache dir is named after its sources.
DRV=$CACHE/sandpod-csi-hostpath-$(cat "$HERE"/csihostpath/{go.mod,go.sum,main.go} | sha256sum | cut -c1-12)
DRIVER=hostpath.csi.sandpod.dev
COMPONENTS="csi-hostpath csi-provisioner csi-snapshotter snapshot-controller"
export GOFLAGS=-mod=mod GOWORK=off
log() { echo "[$(date +%T)] csi: $*" >&2; }

# module_dir MODULE@VERSION: its source in the module cache (downloaded once).
module_dir() { go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)",/\1/p'; }

# build_copy MODULE@VERSION DEST PKG...: builds PKGs in a writable copy of
# the module's source: both sidecars' go.mod files carry replace directives,
# which `go install pkg@version` refuses (as for gVisor's shim in build.sh).
build_copy() {
  local mod=$1 dest=$2 src tmp
  shift 2
  src=$(module_dir "$mod")
  tmp=$(mktemp -d)
  cp -r "$src/." "$tmp/" && chmod -R u+w "$tmp"
  # external-snapshotter replaces its client module with ./client, a nested
  # module the proxy serves on its own (not inside the v8 zip).
  if grep -q '=> ./client' "$tmp/go.mod"; then
    cp -r "$(module_dir "github.com/kubernetes-csi/external-snapshotter/client/v8@$SNAPSHOTTER_VERSION")" "$tmp/client" && chmod -R u+w "$tmp/client"
  fi
  mkdir -p "$dest"
  (cd "$tmp" && CGO_ENABLED=0 go build -trimpath -o "$dest/" "$@") || { rm -rf "$tmp"; return 1; }
  rm -rf "$tmp"
}

build() {
  local t0=$SECONDS
  if [ -x "$SNAP/snapshot-controller" ] && [ -x "$SNAP/csi-snapshotter" ]; then log "external-snapshotter cached"; else
    log "building external-snapshotter $SNAPSHOTTER_VERSION (snapshot-controller, csi-snapshotter)"
    build_copy "github.com/kubernetes-csi/external-snapshotter/v8@$SNAPSHOTTER_VERSION" "$SNAP" ./cmd/snapshot-controller ./cmd/csi-snapshotter
  fi
  if [ -x "$PROV/csi-provisioner" ]; then log "external-provisioner cached"; else
    log "building external-provisioner $PROVISIONER_VERSION"
    build_copy "github.com/kubernetes-csi/external-provisioner/v5@$PROVISIONER_VERSION" "$PROV" ./cmd/csi-provisioner
  fi
  if [ -x "$DRV/csi-hostpath" ]; then log "sandpod-csi-hostpath cached"; else
    log "building sandpod-csi-hostpath"
    mkdir -p "$DRV"
    (cd "$HERE/csihostpath" && CGO_ENABLED=0 go build -trimpath -o "$DRV/csi-hostpath" .)
  fi
  log "built in $((SECONDS - t0))s"
}

# The snapshot CRDs come from the external-snapshotter's client module (the
# kwok bed installs the same: hack/kube/harness/snapshotcrds.go).
crd_dir() { echo "$(module_dir "github.com/kubernetes-csi/external-snapshotter/client/v8@$SNAPSHOTTER_VERSION")/config/crd"; }

bin_of() {
  case "$1" in
    csi-hostpath) echo "$DRV/csi-hostpath" ;;
    csi-provisioner) echo "$PROV/csi-provisioner" ;;
    *) echo "$SNAP/$1" ;;
  esac
}

alive() {
  local f=$R/run/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(bin_of "$1")")" ]
}

start() {
  local name=$1
  shift
  alive "$name" && return 0
  log "starting $name"
  (cd "$R" && exec setsid "$(bin_of "$name")" "$@" >> "$R/logs/$name.log" 2>&1 < /dev/null) &
  echo $! > "$R/run/$name.pid"
}

up() {
  R=$1 BIN=$2 NODE=$3
  local kc="$BIN/kubectl --kubeconfig $R/conf/admin.kubeconfig" k=$R/conf/admin.kubeconfig
  local sock=$R/state/kubelet/plugins/$DRIVER/csi.sock d
  for d in "$(bin_of csi-hostpath)" "$(bin_of csi-provisioner)" "$(bin_of snapshot-controller)" "$(bin_of csi-snapshotter)"; do
    [ -x "$d" ] || { log "missing $d: run hack/testbed/csi.sh build"; exit 1; }
  done
  $kc apply --server-side --field-manager=sandpod-testbed -f "$(crd_dir)/snapshot.storage.k8s.io_volumesnapshotclasses.yaml" \
    -f "$(crd_dir)/snapshot.storage.k8s.io_volumesnapshotcontents.yaml" -f "$(crd_dir)/snapshot.storage.k8s.io_volumesnapshots.yaml" >/dev/null
  $kc wait --for=condition=Established crd/volumesnapshots.snapshot.storage.k8s.io --timeout=60s >/dev/null
  $kc apply --server-side --field-manager=sandpod-testbed -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: $DRIVER}
spec:
  attachRequired: false
  podInfoOnMount: false
  volumeLifecycleModes: [Persistent]
  fsGroupPolicy: None
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sandpod-csi}
provisioner: $DRIVER
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: sandpod-csi
  annotations: {snapshot.storage.kubernetes.io/is-default-class: "true"}
driver: $DRIVER
deletionPolicy: Delete
EOF
  start csi-hostpath --endpoint "$sock" --registration-socket "$R/state/kubelet/plugins_registry/$DRIVER-reg.sock" \
    --drivername "$DRIVER" --nodeid "$NODE" --root "$R/state/csi-hostpath"
  start snapshot-controller --kubeconfig "$k" --leader-election=false
  start csi-provisioner --kubeconfig "$k" --csi-address "$sock" --leader-election=false --timeout=60s --extra-create-metadata
  start csi-snapshotter --kubeconfig "$k" --csi-address "$sock" --leader-election=false --timeout=60s
  local i c
  for ((i = 0; i < 60; i++)); do
    $kc get csinode "$NODE" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | grep -qw "$DRIVER" && { log "$DRIVER registered with kubelet"; break; }
    sleep 1
  done
  [ $i -lt 60 ] || { log "$DRIVER did not register with kubelet"; tail -n 20 "$R/logs/csi-hostpath.log" >&2; exit 1; }
  for c in $COMPONENTS; do alive "$c" || { log "$c died"; tail -n 20 "$R/logs/$c.log" >&2; exit 1; }; done
}

down() {
  R=$1
  local c pid
  for c in $COMPONENTS; do
    [ -f "$R/run/$c.pid" ] || continue
    pid=$(cat "$R/run/$c.pid")
    alive "$c" && kill "$pid" 2>/dev/null && log "stopped $c ($pid)"
    rm -f "$R/run/$c.pid"
  done
}

case "${1:-}" in
  build) build ;;
  up) shift; up "$@" ;;
  down) shift; down "$@" ;;
  *) sed -n '17,19p' "$0" >&2; exit 2 ;;
esac
