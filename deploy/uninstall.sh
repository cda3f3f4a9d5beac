#!/usr/bin/env bash
# Uninstalls sandpod from the cluster kubectl points at.
#
# Deleting the CRDs deletes every Sandbox, SandboxClaim, SandboxWarmPool and
# SandboxTemplate in every namespace and, through owner references, their
# pods, services, secrets and PVCs: the sandboxes' data. The uninstall guard
# (deploy/guard, a ValidatingAdmissionPolicy) makes the API server refuse that
# DELETE unless the CRD is annotated sandpod.dev/allow-delete=true, so
# `kubectl delete -f deploy/install.yaml` leaves the CRDs, sandboxes and PVCs
# in place. This script is the way to uninstall. While Sandboxes exist it
# refuses, says how many, and asks to be told what to do with them:
#
#   deploy/uninstall.sh --dry-run           list what there is; delete nothing
#   deploy/uninstall.sh --keep-data         remove the controller, bridge and their RBAC;
#                                           keep the CRDs, the guard, every sandpod object
#                                           and the PVCs (a later install takes them over)
#   deploy/uninstall.sh --delete-data       remove everything, the sandboxes' data too
#                                           (asks to type "uninstall" unless --yes)
#   deploy/uninstall.sh [--yes]             remove everything when no Sandbox exists
#
# Exit codes: 0 done, 1 aborted or failed, 2 refused (Sandboxes exist, no choice given).
# Environment: KUBECTL (default kubectl), SANDPOD_SYSTEM_NAMESPACE (default sandpod-system).
set -euo pipefail
KUBECTL=${KUBECTL:-kubectl}
# sandpod's own namespace. Not $SANDPOD_NAMESPACE: that is the clients' and
# the CLI's namespace of sandboxes, often a tenant's, which this script
# deletes (namespace and all) as sandpod's.
NS=${SANDPOD_SYSTEM_NAMESPACE:-sandpod-system}
usage() { sed -n '/^#   deploy/p' "$0" | sed 's/^# *//' >&2; exit 1; }

dry=0 yes=0 data=""
for a in "$@"; do
  case "$a" in
    --dry-run) dry=1 ;;
    --yes) yes=1 ;;
    --keep-data) [ -z "$data" ] || usage; data=keep ;;
    --delete-data) [ -z "$data" ] || usage; data=delete ;;
    *) usage ;;
  esac
done

kinds="sandboxclaims.sandpod.dev sandboxwarmpools.sandpod.dev sandboxes.sandpod.dev sandboxsnapshots.sandpod.dev sandboxtemplates.sandpod.dev sandboxquotas.sandpod.dev"
guard="uninstall-guard.sandpod.dev"
count() { # count KIND: objects of KIND in all namespaces (0 without its CRD)
  $KUBECTL get crd "$1" >/dev/null 2>&1 || { echo 0; return; }
  $KUBECTL get "$1" -A --no-headers 2>/dev/null | wc -l | tr -d ' '
}

echo "sandpod objects in the cluster (all namespaces):"
total=0
for k in $kinds; do
  if ! $KUBECTL get crd "$k" >/dev/null 2>&1; then
    echo "  $k: CRD not installed"; continue
  fi
  n=$(count "$k")
  total=$((total + n))
  echo "  $k: $n"
  $KUBECTL get "$k" -A --no-headers 2>/dev/null | awk '{print "      " $1 "/" $2}' | head -20
  [ "$n" -gt 20 ] && echo "      ... and $((n - 20)) more"
done
sandboxes=$(count sandboxes.sandpod.dev)
pvcs=$($KUBECTL get pvc -A -l sandpod.dev/sandbox --no-headers 2>/dev/null | wc -l | tr -d ' ')
echo "  PersistentVolumeClaims of sandboxes (their data): $pvcs"

if [ $dry = 1 ]; then echo "dry run: nothing deleted"; exit 0; fi

if [ "$sandboxes" -gt 0 ] && [ -z "$data" ]; then
  cat >&2 <<MSG
refusing: $sandboxes Sandboxes exist (with $pvcs PVCs of data).
  rerun with --keep-data   to remove the controller and keep the sandboxes, their PVCs and the CRDs
  or with    --delete-data to delete the sandboxes and their data with everything else
MSG
  exit 2
fi

remove_controller() {
  $KUBECTL delete namespace "$NS" --ignore-not-found --wait=false
  $KUBECTL delete clusterrolebinding sandpod-controller sandpod-bridge --ignore-not-found
  $KUBECTL delete clusterrole sandpod-controller sandpod-bridge --ignore-not-found
  $KUBECTL delete flowschema sandpod-claims sandpod-refills --ignore-not-found
  $KUBECTL delete prioritylevelconfiguration sandpod-claims sandpod-refills --ignore-not-found
}

if [ "$data" = keep ]; then
  remove_controller
  echo "sandpod controller and bridge removed; kept: the CRDs, the uninstall guard, $total sandpod objects and $pvcs PVCs"
  exit 0
fi

if [ $yes = 0 ]; then
  if [ ! -t 0 ]; then echo "refusing: not a terminal; rerun with --yes to confirm" >&2; exit 1; fi
  read -r -p "This deletes $total sandpod objects and $pvcs volumes of sandbox data. Type 'uninstall' to go on: " answer
  [ "$answer" = uninstall ] || { echo "aborted: nothing deleted"; exit 1; }
fi

# Claims first (they release their sandboxes), then pools, sandboxes, snapshots (kept by a finalizer until no sandbox uses them) and
# templates, while the controller still runs to clean up; then the rest.
for k in $kinds; do
  if $KUBECTL get crd "$k" >/dev/null 2>&1; then
    $KUBECTL delete "$k" --all -A --wait=true --timeout=5m
  fi
done
# The PVCs go with their sandboxes by owner reference; delete any the
# garbage collector has not reached yet (or that lost their owner).
$KUBECTL delete pvc -A -l sandpod.dev/sandbox --ignore-not-found --wait=false
# Opt in past the guard, then delete the CRDs.
for k in $kinds; do
  if $KUBECTL get crd "$k" >/dev/null 2>&1; then
    $KUBECTL annotate crd "$k" sandpod.dev/allow-delete=true --overwrite
    $KUBECTL delete crd "$k" --ignore-not-found
  fi
done
remove_controller
# Last, the guard (admission policies cannot guard themselves: no opt-in needed).
$KUBECTL delete validatingadmissionpolicybinding "$guard" --ignore-not-found
$KUBECTL delete validatingadmissionpolicy "$guard" --ignore-not-found
echo "sandpod uninstalled"
