#!/usr/bin/env bash
# Regenerates what controller-gen makes from the API types and RBAC markers:
# deepcopy (core/api/v1alpha1), CRDs (deploy/crd) and the controller's
# ClusterRole (deploy/rbac). OUT=dir writes the CRDs and RBAC there instead
# (used by check-generated.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
CONTROLLER_GEN=${CONTROLLER_GEN:-go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0}
OUT=${OUT:-deploy}
$CONTROLLER_GEN object paths=./core/api/...
$CONTROLLER_GEN crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=./core/api/... output:crd:dir="$OUT/crd"
$CONTROLLER_GEN rbac:roleName=sandpod-controller paths=./core/controller/... output:rbac:dir="$OUT/rbac"
