#!/usr/bin/env bash
# helm v3, built once from its Go module (helm.sh/helm/v3) and cached in
# ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/helm-VERSION, as hack/proto/buf.sh
# builds buf: the machines this runs on reach the Go module proxy, not
# GitHub releases. `go install module@version` builds in helm's own module
# (its go.mod, not ours: the root go.mod is untouched). A cold build (empty
# module and build caches) took 3m22s on 2 shared cores; under a minute
# when the module cache already holds the k8s modules sandpod uses.
#
# usage: hack/helm.sh --print   # build if missing, print the binary's path
#        hack/helm.sh ARGS...   # build if missing, run helm ARGS
set -euo pipefail
HELM_VERSION=${HELM_VERSION:-v3.22.0}
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
dir=$CACHE/helm-$HELM_VERSION
source "$(dirname "$0")/local/progress.sh"
if [ ! -x "$dir/helm" ]; then
  echo "[$(ts)] building helm $HELM_VERSION from its Go module into $dir (once)" >&2
  mkdir -p "$dir"
  # -X sets what `helm version` prints (a release build's ldflags).
  GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN=$dir \
    with_progress "building helm $HELM_VERSION" "it downloads and compiles its module once, a minute or more on 2 cores" \
    go install -trimpath -ldflags "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
if [ "${1:-}" = --print ]; then echo "$dir/helm"; exit 0; fi
exec "$dir/helm" "$@"
