#!/usr/bin/env bash
# Fails when the committed deepcopy, CRDs, RBAC, Helm CRD copies or
# install.yaml differ from what hack/kube/generate.sh makes from the sources.
# It regenerates in a scratch copy of the repo, so the work tree is untouched.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/repo"
cp -r go.mod go.sum core hack deploy "$tmp/repo/"
[ -d proto ] && cp -r proto "$tmp/repo/"   # packages under core may import generated protos
# go.mod replaces the client's module with ./clients/go: it must exist.
mkdir -p "$tmp/repo/clients" && cp -r clients/go "$tmp/repo/clients/"
(cd "$tmp/repo" && hack/kube/generate.sh)
status=0
for p in core/api/v1alpha1/zz_generated.deepcopy.go deploy/crd deploy/rbac deploy/helm/sandpod/crds \
         deploy/helm/sandpod/templates/clusterrole.yaml deploy/helm/sandpod/templates/uninstall-guard.yaml deploy/install.yaml; do
  if ! diff -r -u "$p" "$tmp/repo/$p" > "$tmp/diff" 2>&1; then
    echo "generated file(s) out of date: $p  (run hack/kube/generate.sh)"
    head -40 "$tmp/diff"
    status=1
  fi
done
[ $status = 0 ] && echo "generated Kubernetes artifacts are up to date"
exit $status
