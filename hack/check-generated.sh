#!/usr/bin/env bash
# Fails when generated code (protobuf stubs, deepcopy, CRDs, RBAC) differs
# from what its sources generate. It regenerates in place (a no-op when in
# sync) and compares against a snapshot taken before.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(proto clients/python/sandpod/v1 core/api/v1alpha1 deploy/crd deploy/rbac)
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
for p in "${paths[@]}"; do
  [ -e "$p" ] && mkdir -p "$snap/$(dirname "$p")" && cp -a "$p" "$snap/$p"
done
hack/generate-proto.sh
[ -x hack/kube/generate.sh ] && hack/kube/generate.sh
status=0
for p in "${paths[@]}"; do
  [ -e "$p" ] || continue
  if ! diff -r --exclude=__pycache__ "$snap/$p" "$p" >/dev/null; then
    echo "generated code in $p is out of date:" >&2
    diff -r --exclude=__pycache__ "$snap/$p" "$p" | head -40 >&2 || true
    status=1
  fi
done
if [ $status -ne 0 ]; then
  echo "run 'make generate' and commit the result" >&2
fi
exit $status
