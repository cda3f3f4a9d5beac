#!/usr/bin/env bash
# buf, built once from its Go module (github.com/bufbuild/buf) and cached in
# ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/buf-VERSION, as hack/local/deps.sh
# caches runc: the machines this runs on reach the Go module proxy, not
# GitHub releases. A cold build takes a few minutes on 2 cores.
#
# usage: hack/proto/buf.sh --print   # build if missing, print the binary's path
#        hack/proto/buf.sh ARGS...   # build if missing, run buf ARGS
set -euo pipefail
BUF_VERSION=${BUF_VERSION:-v1.75.0}
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
dir=$CACHE/buf-$BUF_VERSION
source "$(dirname "$0")/../local/progress.sh"
if [ ! -x "$dir/buf" ]; then
  echo "[$(ts)] building buf $BUF_VERSION from its Go module into $dir (once)" >&2
  mkdir -p "$dir"
  GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN=$dir \
    with_progress "building buf $BUF_VERSION" "it downloads and compiles its module once, several minutes on 2 cores" \
    go install -trimpath "github.com/bufbuild/buf/cmd/buf@$BUF_VERSION"
fi
if [ "${1:-}" = --print ]; then echo "$dir/buf"; exit 0; fi
exec "$dir/buf" "$@"
