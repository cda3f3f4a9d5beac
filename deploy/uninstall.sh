#!/usr/bin/env bash
# Uninstalls sandpod from the cluster kubectl points at. Deleting the CRDs
# deletes every Sandbox, SandboxClaim, SandboxWarmPool and SandboxTemplate in
# every namespace (and, through owner references, their pods, PVCs - that is,
# the sandboxes' data - services and secrets). So this script first lists what
# would be deleted and refuses to go on without confirmation.
#
# usage: deploy/uninstall.sh            # list, then ask to type the word "uninstall"
#        deploy/uninstall.sh --dry-run  # list only
#        deploy/uninstall.sh --yes      # list, then delete without asking (automation)
set -euo pipefail
KUBECTL=${KUBECTL:-kubectl}
mode=${1:-ask}
kinds="sandboxclaims.sandpod.dev sandboxwarmpools.sandpod.dev sandboxes.sandpod.dev sandboxtemplates.sandpod.dev"

echo "sandpod objects that uninstall would delete (all namespaces):"
total=0
for k in $kinds; do
  if ! $KUBECTL get crd "$k" >/dev/null 2>&1; then
    echo "  $k: CRD not installed"; continue
  fi
  n=$($KUBECTL get "$k" -A --no-headers 2>/dev/null | wc -l | tr -d ' ')
  total=$((total + n))
  echo "  $k: $n"
  $KUBECTL get "$k" -A --no-headers 2>/dev/null | awk '{print "      " $1 "/" $2}' | head -20
  [ "$n" -gt 20 ] && echo "      ... and $((n - 20)) more"
done
pvcs=$($KUBECTL get pvc -A -l sandpod.dev/sandbox --no-headers 2>/dev/null | wc -l | tr -d ' ')
echo "  PersistentVolumeClaims of sandboxes (their data): $pvcs"
echo "  plus: CRDs, namespace sandpod-system, ClusterRole/ClusterRoleBinding sandpod-controller"

case "$mode" in
  --dry-run) echo "dry run: nothing deleted"; exit 0 ;;
  --yes) ;;
  *)
    if [ ! -t 0 ]; then echo "refusing: not a terminal; rerun with --yes to confirm" >&2; exit 1; fi
    read -r -p "This deletes $total sandpod objects and $pvcs volumes of sandbox data. Type 'uninstall' to go on: " answer
    [ "$answer" = uninstall ] || { echo "aborted: nothing deleted"; exit 1; }
    ;;
esac

# Claims first (they release their sandboxes), then pools, sandboxes and
# templates, while the controller still runs to clean up; then the rest.
for k in $kinds; do
  $KUBECTL get crd "$k" >/dev/null 2>&1 && $KUBECTL delete "$k" --all -A --wait=true --timeout=5m || true
done
$KUBECTL delete crd $kinds --ignore-not-found
$KUBECTL delete namespace sandpod-system --ignore-not-found
$KUBECTL delete clusterrolebinding sandpod-controller --ignore-not-found
$KUBECTL delete clusterrole sandpod-controller --ignore-not-found
echo "sandpod uninstalled"
