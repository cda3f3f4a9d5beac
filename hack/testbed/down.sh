#!/usr/bin/env bash
# Stops the node bed that hack/testbed/up.sh started and removes what it left
# on the host: pods (through kubelet, so CNI and mounts are torn down
# properly), the components (by their pid files), leftover shims and
# sandboxes, mounts under the state dir, CNI network namespaces, the bridge,
# the iptables chains of kube-proxy, kube-router and CNI and kube-router's
# ipsets, empty kubepods cgroups, and the
# state dir itself (kept with KEEP_STATE=1: logs, etcd data, certificates).
#
# Safe to run twice, and when nothing is up. Kills only processes it can tie
# to this bed: the pids in its pid files, processes whose command line names
# the state dir (containerd shims, runsc), and processes in kubepods cgroups.
set -uo pipefail   # no -e: clean up as much as possible, whatever fails
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
R=${SANDPOD_TESTBED_DIR:-$REPO/_output/testbed}
R=$(realpath -m "$R")
BIN=${SANDPOD_TESTBED_BIN:-$("$HERE/build.sh" --print)}
BRIDGE=sandpodtb0
log() { echo "[$(date +%T)] node bed: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }

kc() { "$BIN/kubectl" --kubeconfig "$R/conf/admin.kubeconfig" --request-timeout=5s "$@"; }
ctr() { "$BIN/ctr" -a "$R/run/containerd.sock" -n k8s.io "$@"; }

# pid_of NAME: the live pid in NAME's pid file, if any.
pid_of() {
  local f=$R/run/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}
# stop NAME [SECONDS]: SIGTERM, then SIGKILL after SECONDS (default 3:
# the bed's state is thrown away, only etcd gets longer to close its data).
stop() {
  local pid i
  if pid=$(pid_of "$1"); then
    kill "$pid" 2>/dev/null
    for ((i = 0; i < ${2:-3} * 4; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null && sleep 0.2
    log "stopped $1 ($pid)"
  fi
  rm -f "$R/run/$1.pid"
}

if [ ! -d "$R" ]; then
  log "no state dir $R: cleaning host leftovers only"
fi

# 1. Let kubelet tear the pods down (CNI DEL frees IPs and iptables rules,
# volumes are unmounted). The scheduler goes first, so the pods that
# controllers make again stay Pending instead of starting anew.
stop scheduler
if pid_of apiserver >/dev/null && pid_of kubelet >/dev/null; then
  kc delete pod --all -A --grace-period=1 --wait=false >/dev/null 2>&1
  for ((i = 0; i < 60; i++)); do
    [ -z "$(kc get pods -A -o jsonpath='{.items[?(@.spec.nodeName)].metadata.name}' 2>/dev/null)" ] && break
    sleep 1
  done
fi
"$HERE/csi.sh" down "$R"   # the CSI driver and sidecars, once kubelet unmounted the pods' volumes
for c in kube-router kube-proxy kubelet kcm apiserver; do stop "$c"; done
stop etcd 10

# 2. Whatever containerd still runs.
if pid_of containerd >/dev/null; then
  for t in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
  sleep 1
  for t in $(ctr tasks ls -q 2>/dev/null); do ctr tasks delete -f "$t" >/dev/null 2>&1; done
  for c in $(ctr containers ls -q 2>/dev/null); do ctr containers rm "$c" >/dev/null 2>&1; done
fi
stop containerd

# 3. Leftover processes of this bed, killed by pid: shims and runsc
# (their command lines name the bed's containerd socket or runsc root),
# then container processes (in kubelet's kubepods cgroups).
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$pid" = $$ ] && continue
  cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
  case "$cmd" in
    *"$R/run/containerd.sock"* | *"$R/state/runsc"* | *"$R/conf/runsc.toml"*)
      kill -9 "$pid" 2>/dev/null && log "killed leftover $pid: ${cmd:0:100}" ;;
  esac
done
for procs in /sys/fs/cgroup/*/kubepods/ /sys/fs/cgroup/kubepods/ /sys/fs/cgroup/unified/kubepods/; do
  [ -d "$procs" ] || continue
  find "$procs" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | while read -r pid; do
    kill -9 "$pid" 2>/dev/null && log "killed container process $pid"
  done
done
sleep 1

# containerd keeps a few things under the fixed /run/containerd whatever its
# config (the shims' sockets, gVisor's null netns): ours to clean unless
# another containerd serves from there.
OWN_RUN_CONTAINERD=1
if ss -xl 2>/dev/null | grep -q '/run/containerd/containerd.sock'; then OWN_RUN_CONTAINERD=0; fi

# 4. Mounts: pod volumes, overlay root file systems, shm and netns bind
# mounts; deepest first, lazily (a busy mount goes when its last user does).
awk '{print $5}' /proc/self/mountinfo | while read -r m; do
  m=$(printf '%b' "$m")   # mountinfo escapes spaces as \040
  case "$m" in
    "$R"/* | /run/netns/cni-*) echo "$m" ;;
    /run/containerd/*) [ $OWN_RUN_CONTAINERD = 1 ] && echo "$m" ;;
  esac
done | sort -r | while read -r m; do
  umount -l "$m" 2>/dev/null && log "unmounted $m"
done
rm -f /run/netns/cni-* 2>/dev/null
rmdir /run/netns 2>/dev/null

# 5. Network: the CNI bridge and the iptables chains kube-proxy, kubelet and
# the CNI plugins made (KUBE-*, CNI-*; nothing else on these machines uses
# those prefixes). References first, then flush, then delete the chains.
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  ip link del "$BRIDGE" && log "deleted bridge $BRIDGE"
fi
for ipt in iptables ip6tables; do
  command -v $ipt >/dev/null || continue
  for tbl in nat filter mangle; do
    $ipt -t $tbl -S 2>/dev/null | grep -E '^-A .*-j (CNI-|KUBE-)' | sed 's/^-A //' | while read -r rule; do
      # shellcheck disable=SC2086 # the rule is a list of arguments
      eval "$ipt -t $tbl -D $rule" 2>/dev/null
    done
    chains=$($ipt -t $tbl -S 2>/dev/null | awk '/^-N (CNI-|KUBE-)/{print $2}')
    for ch in $chains; do $ipt -t $tbl -F "$ch" 2>/dev/null; done
    for ch in $chains; do $ipt -t $tbl -X "$ch" 2>/dev/null; done
  done
done
# kube-router's ipsets (KUBE-SRC-*, KUBE-DST-*, and TMP-* ones of a sync cut
# short), free once the rules above that named them are gone.
if command -v ipset >/dev/null; then
  for s in $(ipset list -n 2>/dev/null | grep -E '^(KUBE-|TMP-|inet6:KUBE-)'); do ipset destroy "$s" 2>/dev/null; done
fi
# kube-proxy sets route_localnet=1 (the kernel's default is 0); the bridge
# plugin's ip_forward=1 stays (other things on a host may rely on it).
sysctl -qw net.ipv4.conf.all.route_localnet=0 2>/dev/null

# 6. kubelet's cgroups (depth first; only empty ones can go).
for h in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
done

# 7. What kubelet, containerd and libcni keep in fixed host paths.
[ $OWN_RUN_CONTAINERD = 1 ] && rm -rf /run/containerd 2>/dev/null

# 8. The state dir (not across file systems: anything still mounted stays).
if [ -d "$R" ] && [ "${KEEP_STATE:-0}" != 1 ]; then
  rm -rf --one-file-system "$R" 2>/dev/null || log "could not remove all of $R (still mounted?)"
  [ -d "$R" ] || log "removed $R"
elif [ -d "$R" ]; then
  rm -f "$R"/run/*.pid "$R"/run/containerd.sock*
  rm -rf "$R/run/imported"
  log "kept $R (KEEP_STATE=1)"
fi
log "down"
