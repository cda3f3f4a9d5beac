#!/usr/bin/env bash
# Fails when generated code differs from what its sources generate: the
# protobuf stubs here (regenerated in place, a no-op when in sync, and
# compared with a snapshot), the sync Python client written from the async one
# (hack/unasync.py --check), the Kubernetes artifacts (deepcopy, CRDs, RBAC,
# Helm copies, install.yaml) by hack/kube/check-generated.sh, that the Helm
# chart renders the same objects as install.yaml (hack/kube/check-helm.sh,
# with helm built by hack/helm.sh). Then buf lint
# and buf breaking on the contract (hack/proto/lint.sh: what it compares with).
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(proto clients/python/sandpod/v1 bridge/e2b/envd)
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
for p in "${paths[@]}"; do
  [ -e "$p" ] && mkdir -p "$snap/$(dirname "$p")" && cp -a "$p" "$snap/$p"
done
hack/generate-proto.sh
status=0
"${PYTHON:-.venv/bin/python}" hack/unasync.py --check || status=1
hack/kube/check-generated.sh || status=1
hack/kube/check-helm.sh || status=1
hack/proto/lint.sh || status=1
for p in "${paths[@]}"; do
  [ -e "$p" ] || continue
  if ! diff -r --exclude=__pycache__ "$snap/$p" "$p" >/dev/null; then
    echo "generated code in $p is out of date:" >&2
    diff -r --exclude=__pycache__ "$snap/$p" "$p" | head -40 >&2 || true
    status=1
  fi
done
if [ $status -ne 0 ]; then
  echo "run 'make generate' and commit the result (buf: fix the .proto file, see proto/buf.yaml)" >&2
fi
exit $status
