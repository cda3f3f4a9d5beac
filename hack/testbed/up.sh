#!/usr/bin/env bash
# Starts the node bed (a single-node Kubernetes): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd (runc, and gVisor's
# runsc as RuntimeClass "gvisor"), kubelet, kube-proxy and kube-router's
# NetworkPolicy controller, all as host processes of this machine with real
# containers. Needs root.
#
#   hack/testbed/build.sh      # once: the binaries (cached in ~/.cache/sandpod)
#   hack/testbed/images.sh     # the images (into the state dir)
#   hack/testbed/up.sh         # this script (idempotent)
#   hack/testbed/down.sh       # stop and clean up
#   hack/testbed/up.sh --status   # exit 0 when the bed is up, 1 otherwise
#
# State, logs and pid files live in ${SANDPOD_TESTBED_DIR:-<repo>/_output/testbed};
# the admin kubeconfig is <state>/conf/admin.kubeconfig (printed last).
# Certificates and tokens are made on the first start and kept until
# down.sh removes the state dir. Components that are running are left alone,
# so a second run only starts what is missing, (re)imports images that
# changed, and re-applies the bed's cluster objects.
#
# What the bed gives a test: pods under runc (default) or gVisor
# (runtimeClassName: gvisor); pod IPs and ClusterIPs reachable from the host;
# kubectl exec/logs/port-forward; NetworkPolicy enforced (kube-router's
# firewall: iptables and ipset, see start_netpol); PVCs bound to pre-made hostPath PVs of the
# default StorageClass "sandpod-testbed" (reclaim policy Retain: a released PV
# is made Available again by clearing its claimRef, which tests/e2e does);
# cluster DNS for cluster.local (CoreDNS, hack/testbed/dns.sh);
# dynamically provisioned volumes with CSI snapshots in StorageClass
# "sandpod-csi" and VolumeSnapshotClass "sandpod-csi" (hack/testbed/csi.sh).
# Not provided: NodePort, LoadBalancer.
#
# Quirks of the machines it runs on (2 cores, Debian 12, cgroup v1, no
# registry, a VM without CAP_SYS_RESOURCE), with their fixes below:
# restrict_oom_score_adj, failCgroupV1: false, containerd config version 4,
# a patched gVisor shim (build.sh), locally made images (images.sh),
# --kubelet-preferred-address-types (no DNS name for the node).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
R=${SANDPOD_TESTBED_DIR:-$REPO/_output/testbed}
BIN=${SANDPOD_TESTBED_BIN:-$("$HERE/build.sh" --print)}
NODE=sandpod-testbed
BRIDGE=sandpodtb0          # the CNI bridge (down.sh deletes it)
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.0.0.0/24   # kubernetes.default is 10.0.0.1
API_PORT=36443
PV_COUNT=${SANDPOD_TESTBED_PVS:-20}
# Ports kept out of the usual ones so a bed never collides with a developer's
# own cluster: etcd 32379-32381, controller-manager 30257, scheduler 30259,
# kube-proxy 30249/30256; kubelet keeps 10250/10248 (the API server asks the
# node's port).

export PATH=$BIN:$PATH   # containerd finds its shims (runc v2, runsc v1) on PATH
KUBECONFIG_ADMIN=$R/conf/admin.kubeconfig
kc() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
ts() { date +%T; }
log() { echo "[$(ts)] node bed: $*" >&2; }
die() { log "$*"; exit 1; }

# alive NAME: the component's pid file names a live process running its
# binary (a recycled pid running something else does not count).
alive() {
  local f=$R/run/$1.pid pid exe
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  [ "$exe" = "$(readlink -f "$BIN/$(binary_of "$1")")" ]
}
binary_of() {
  case "$1" in
    apiserver) echo kube-apiserver ;;
    kcm) echo kube-controller-manager ;;
    scheduler) echo kube-scheduler ;;
    *) echo "$1" ;;
  esac
}
COMPONENTS="etcd containerd apiserver kcm scheduler kubelet kube-proxy kube-router"

status() {
  local c
  for c in $COMPONENTS; do alive "$c" || return 1; done
  kc get --raw /readyz >/dev/null 2>&1
}
if [ "${1:-}" = --status ]; then
  if status; then echo "up ($R)"; exit 0; fi
  echo "not up ($R)"; exit 1
fi
[ $# -eq 0 ] || { sed -n '8,13p' "$0" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (containers, mounts, iptables)"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl \
  containerd ctr containerd-shim-runc-v2 runc runsc containerd-shim-runsc-v1 cni/bridge cni/host-local cni/loopback cni/portmap kube-router; do
  [ -x "$BIN/$b" ] || die "missing $BIN/$b: run hack/testbed/build.sh"
done
command -v iptables >/dev/null || die "needs iptables (apt-get install iptables)"
command -v ipset >/dev/null || die "needs ipset (apt-get install ipset; hack/testbed/build.sh installs it)"

# The node's address: the one on the default route's interface (the API
# server advertises it; pods reach kubernetes.default through it).
NODE_IP=${SANDPOD_TESTBED_NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')}
[ -n "$NODE_IP" ] || die "cannot find the node IP (no default route?): set SANDPOD_TESTBED_NODE_IP"

mkdir -p "$R"/{logs,run,state,conf,pki,cni/net.d,images,pv}

# --- certificates and tokens: once per state dir (a changed node IP remakes
# the API server's certificate only).
make_pki() {
  local p=$R/pki
  if [ ! -f "$p/ca.crt" ]; then
    log "making certificates and tokens"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/ca.key" -out "$p/ca.crt" -days 3650 -subj "/CN=sandpod-testbed-ca" 2>/dev/null
    openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
    openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
    # Static bearer tokens (--token-auth-file): no client certificates to
    # make, and a test reads the admin token straight from the kubeconfig.
    cat > "$p/tokens.csv" <<EOF
admin-token-testbed,admin,1,"system:masters"
kcm-token-testbed,system:kube-controller-manager,2
sched-token-testbed,system:kube-scheduler,3
kubelet-token-testbed,system:node:$NODE,4,"system:nodes"
EOF
    chmod 600 "$p"/*.key "$p/tokens.csv"
  fi
  if [ ! -f "$p/apiserver.crt" ] || [ "$(cat "$p/apiserver.ip" 2>/dev/null)" != "$NODE_IP" ]; then
    cat > "$p/apiserver.ext" <<EOF
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1,IP:$NODE_IP
EOF
    openssl req -newkey rsa:2048 -nodes -keyout "$p/apiserver.key" -out "$p/apiserver.csr" -subj "/CN=kube-apiserver" 2>/dev/null
    openssl x509 -req -in "$p/apiserver.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
      -out "$p/apiserver.crt" -days 3650 -extfile "$p/apiserver.ext" 2>/dev/null
    echo "$NODE_IP" > "$p/apiserver.ip"
  fi
}

# --- configuration: rewritten on every start (cheap; follows a moved bin dir).
write_conf() {
  local c=$R/conf x
  for x in "admin admin admin-token-testbed" "kcm system:kube-controller-manager kcm-token-testbed" \
    "scheduler system:kube-scheduler sched-token-testbed" "kubelet system:node:$NODE kubelet-token-testbed"; do
    # shellcheck disable=SC2086 # word splitting intended: name user token
    set -- $x
    cat > "$c/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandpod-testbed
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$R/pki/ca.crt"}
users:
- name: "$2"
  user: {token: $3}
contexts:
- name: sandpod-testbed
  context: {cluster: sandpod-testbed, user: "$2"}
current-context: sandpod-testbed
EOF
    chmod 600 "$c/$1.kubeconfig"
  done
  # containerd config version 4: the socket address belongs under
  # plugins.'io.containerd.server.v1.grpc' (a [grpc] table is silently
  # ignored in this version).
  cat > "$c/containerd.toml" <<EOF
version = 4
root = "$R/state/containerd/root"
state = "$R/state/containerd/state"
[plugins.'io.containerd.server.v1.grpc']
  address = '$R/run/containerd.sock'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '$R/run/containerd.sock.ttrpc'
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'registry.k8s.io/pause:3.10'
[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  # The VM drops CAP_SYS_RESOURCE: without this, setting the pause
  # container's oom_score_adj (-998) fails and no pod starts.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '$BIN/runc'
        Root = '$R/state/runc'
        SystemdCgroup = false
    # RuntimeClass "gvisor" (handler runsc); systrap needs no KVM.
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc]
      runtime_type = 'io.containerd.runsc.v1'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc.options]
        TypeUrl = 'io.containerd.runsc.v1.options'
        ConfigPath = '$c/runsc.toml'
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['$BIN/cni']
    conf_dir = '$R/cni/net.d'
EOF
  cat > "$c/runsc.toml" <<EOF
binary_name = "$BIN/runsc"
root_path = "$R/state/runsc"
[runsc_config]
  platform = "systrap"
EOF
  # One bridge for all pods; ipMasq lets pods reach beyond the node,
  # hairpinMode lets a pod reach itself through a ClusterIP.
  cat > "$R/cni/net.d/10-sandpod-testbed.conflist" <<EOF
{"cniVersion":"1.0.0","name":"sandpod-testbed","plugins":[
 {"type":"bridge","bridge":"$BRIDGE","isGateway":true,"ipMasq":true,"hairpinMode":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$POD_CIDR"}]],"routes":[{"dst":"0.0.0.0/0"}],"dataDir":"$R/state/cni-ipam"}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
EOF
  cat > "$c/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false            # the host is cgroup v1 (hybrid); refused by default since 1.35
cgroupDriver: cgroupfs
cgroupsPerQOS: true
failSwapOn: false
containerRuntimeEndpoint: unix://$R/run/containerd.sock
podLogsDir: $R/state/pod-logs  # kept with the bed (make e2e collects them)
port: 10250
healthzPort: 10248
readOnlyPort: 0
# Anonymous, unauthorized access to the kubelet: a throwaway bed only.
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
clusterDNS: ["10.0.0.10"]      # the kube-dns Service (CoreDNS, hack/testbed/dns.sh)
podCIDR: $POD_CIDR
enforceNodeAllocatable: []
# There is no registry to pull images back from: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {}
EOF
}

# waitfor WHAT SECONDS CMD...: polls CMD once a second.
waitfor() {
  local what=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs; i++)); do
    if "$@" >/dev/null 2>&1; then log "$what ok"; return 0; fi
    sleep 1
  done
  log "$what: not ready after ${secs}s"
  return 1
}

# start NAME ARGS...: starts a component in the background unless it is
# running; its output goes to logs/NAME.log, its pid to run/NAME.pid.
STARTED=0
start() {
  local name=$1
  shift
  if alive "$name"; then return 0; fi
  log "starting $name"
  # setsid: its own session, so a Ctrl-C at the terminal (or a timeout that
  # kills make's process group) leaves the bed to down.sh. In a shell
  # without job control the subshell is no group leader, so setsid does not
  # fork and the pid below stays the component's.
  (cd "$R" && exec setsid "$BIN/$(binary_of "$name")" "$@" >> "$R/logs/$name.log" 2>&1 < /dev/null) &
  echo $! > "$R/run/$name.pid"
  STARTED=$((STARTED + 1))
}

# start_netpol: kube-router's network policy controller only (no BGP
# routing, no service proxy), so the bed enforces NetworkPolicy like a
# cluster with an enforcing CNI: per-pod iptables chains in the filter
# table's INPUT, FORWARD and OUTPUT (bridged pod-to-pod traffic crosses
# FORWARD through br_netfilter), with ipsets of the selected pods and
# blocks. Traffic from the node itself to a pod is always allowed (kubelet,
# and the tests' own connections to pod IPs). The binary is kube-router's
# netpol controller alone (hack/testbed/kube-router.sh); health on
# 127.0.0.1:20244 once it has synced.
start_netpol() {
  start kube-router --kubeconfig conf/admin.kubeconfig --hostname-override $NODE \
    --service-cluster-ip-range $SERVICE_CIDR --health-addr 127.0.0.1:20244
}

# fail_with NAME: a component did not come up: show its log's tail.
fail_with() {
  log "$1 failed; last lines of $R/logs/$1.log:"
  tail -n 30 "$R/logs/$1.log" >&2 || true
  exit 1
}

# port_free PORT NAME: a component that is not ours must not hold its port
# (another node bed, e.g. one started from a different state dir).
port_free() {
  alive "$2" && return 0
  if ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; then
    die "port $1 ($2) is taken by another process: is another node bed up? (hack/testbed/down.sh with its SANDPOD_TESTBED_DIR)"
  fi
}

# import_images: every image tar in images/ whose content changed since it
# was last imported into containerd's k8s.io namespace (kubelet's).
import_images() {
  local t sum stamp
  shopt -s nullglob
  local tars=("$R"/images/*.tar)
  shopt -u nullglob
  [ ${#tars[@]} -gt 0 ] || die "no images in $R/images: run hack/testbed/images.sh"
  [ -f "$R/images/pause.tar" ] || die "no pause image in $R/images: run hack/testbed/images.sh"
  mkdir -p "$R/run/imported"
  for t in "${tars[@]}"; do
    sum=$(sha256sum "$t" | cut -d' ' -f1)
    stamp=$R/run/imported/$(basename "$t").sha256
    [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ] && continue
    "$BIN/ctr" -a "$R/run/containerd.sock" -n k8s.io images import "$t" >> "$R/logs/ctr-import.log" 2>&1 ||
      { tail -n 20 "$R/logs/ctr-import.log" >&2; die "importing $t failed"; }
    echo "$sum" > "$stamp"
    log "imported $(basename "$t")"
  done
}

# cluster_objects: what every test expects on the bed. Applied on every run
# (server-side apply: no-ops when unchanged).
cluster_objects() {
  local i y
  y=$(mktemp)
  cat > "$y" <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
# PVCs without a class get this one; the PVs below satisfy them (no
# dynamic provisioner on the bed).
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: sandpod-testbed
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
reclaimPolicy: Retain
volumeBindingMode: Immediate
EOF
  for ((i = 0; i < PV_COUNT; i++)); do
    local d
    d=$(printf '%s/pv/pv-%02d' "$R" "$i")
    # World-writable: a sandbox may run as any user.
    mkdir -p "$d" && chmod 0777 "$d"
    cat >> "$y" <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $(printf 'sandpod-testbed-pv-%02d' "$i")
  labels: {sandpod.dev/testbed: "true"}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce, ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: sandpod-testbed
  hostPath: {path: "$d", type: Directory}
EOF
  done
  kc apply --server-side --field-manager=sandpod-testbed -f "$y" >/dev/null
  rm -f "$y"
}

make_pki
write_conf

port_free 32379 etcd
port_free $API_PORT apiserver
port_free 10250 kubelet

# etcd: --unsafe-no-fsync because the bed is thrown away anyway and fsync
# on a shared VM disk makes every write slow.
start etcd --data-dir "$R/state/etcd" --name default \
  --listen-client-urls http://127.0.0.1:32379 --advertise-client-urls http://127.0.0.1:32379 \
  --listen-peer-urls http://127.0.0.1:32380 --initial-advertise-peer-urls http://127.0.0.1:32380 \
  --initial-cluster default=http://127.0.0.1:32380 --listen-metrics-urls http://127.0.0.1:32381 \
  --unsafe-no-fsync --log-level warn
start containerd --config "$R/conf/containerd.toml"
waitfor etcd 60 curl -sf http://127.0.0.1:32379/health || fail_with etcd

start apiserver --etcd-servers http://127.0.0.1:32379 --secure-port $API_PORT --bind-address 0.0.0.0 \
  --advertise-address "$NODE_IP" \
  --tls-cert-file pki/apiserver.crt --tls-private-key-file pki/apiserver.key --client-ca-file pki/ca.crt \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file pki/sa.pub \
  --service-account-signing-key-file pki/sa.key --token-auth-file pki/tokens.csv \
  --authorization-mode Node,RBAC --service-cluster-ip-range $SERVICE_CIDR --allow-privileged=true \
  --enable-admission-plugins NodeRestriction \
  --kubelet-preferred-address-types InternalIP,Hostname   # no DNS name for the node: exec/logs go to its IP
waitfor containerd 60 test -S "$R/run/containerd.sock" || fail_with containerd
import_images
waitfor apiserver 120 kc get --raw /readyz || fail_with apiserver

start kcm --kubeconfig conf/kcm.kubeconfig --authentication-kubeconfig conf/kcm.kubeconfig \
  --authorization-kubeconfig conf/kcm.kubeconfig --secure-port 30257 --bind-address 127.0.0.1 \
  --service-account-private-key-file pki/sa.key --root-ca-file pki/ca.crt \
  --use-service-account-credentials=true --service-cluster-ip-range $SERVICE_CIDR --leader-elect=false
start scheduler --kubeconfig conf/scheduler.kubeconfig --authentication-kubeconfig conf/scheduler.kubeconfig \
  --authorization-kubeconfig conf/scheduler.kubeconfig --secure-port 30259 --bind-address 127.0.0.1 \
  --leader-elect=false
mkdir -p "$R/state/kubelet" "$R/state/pod-logs"
start kubelet --config conf/kubelet.yaml --kubeconfig conf/kubelet.kubeconfig --root-dir "$R/state/kubelet" \
  --cert-dir "$R/state/kubelet/pki" --hostname-override $NODE --node-ip "$NODE_IP"
# kube-proxy (iptables mode) makes ClusterIPs work, from pods and from the
# host; pods reach kubernetes.default (10.0.0.1) through it.
start kube-proxy --kubeconfig conf/admin.kubeconfig --cluster-cidr 10.244.0.0/16 --hostname-override $NODE \
  --proxy-mode iptables --conntrack-max-per-core 0 \
  --metrics-bind-address 127.0.0.1:30249 --healthz-bind-address 127.0.0.1:30256

waitfor node-ready 120 kc wait --for=condition=Ready node/$NODE --timeout=1s || fail_with kubelet
start_netpol   # after the Node exists: kube-router looks itself up by name
waitfor default-serviceaccount 60 kc get serviceaccount default || fail_with kcm
waitfor kube-proxy 60 curl -sf http://127.0.0.1:30256/healthz || fail_with kube-proxy
waitfor kube-router 120 curl -sf http://127.0.0.1:20244/healthz || fail_with kube-router
cluster_objects
source "$HERE/dns.sh" && cluster_dns   # CoreDNS in kube-system, Service kube-dns
"$HERE/csi.sh" up "$R" "$BIN" "$NODE"   # CSI storage with snapshots (StorageClass sandpod-csi)
for c in $COMPONENTS; do alive "$c" || fail_with "$c"; done
if [ "$STARTED" = 0 ]; then
  log "already up ($R)"
else
  log "up: $STARTED component(s) started ($R)"
fi
echo "$KUBECONFIG_ADMIN"
