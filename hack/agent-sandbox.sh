#!/usr/bin/env bash
# agent-sandbox's controller (sigs.k8s.io/agent-sandbox), built once from its
# Go module and cached in ${SANDPOD_CACHE:-$HOME/.cache/sandpod}/agent-sandbox-VERSION,
# as hack/helm.sh builds helm: the machines this runs on reach the Go module
# proxy, not GitHub releases or a container registry. The node bed's
# benchmark (`go run ./bench -suites testbed`) runs it as a host process to
# time agent-sandbox's claims beside sandpod's (bench/testbed_agentsandbox.go).
# `go install module@version` builds in agent-sandbox's own module (its
# go.mod, not ours).
#
# usage: hack/agent-sandbox.sh --print   # build if missing, print the binary's path
#        hack/agent-sandbox.sh --crds    # print the directory of its CRDs (module cache)
#        hack/agent-sandbox.sh ARGS...   # build if missing, run the controller with ARGS
# AGENT_SANDBOX_BUILD=0 fails instead of building (the benchmark's lookup).
set -euo pipefail
AGENT_SANDBOX_VERSION=${AGENT_SANDBOX_VERSION:-v1.0.1}
MODULE=sigs.k8s.io/agent-sandbox
CACHE=${SANDPOD_CACHE:-$HOME/.cache/sandpod}
dir=$CACHE/agent-sandbox-$AGENT_SANDBOX_VERSION
bin=$dir/agent-sandbox-controller
source "$(dirname "$0")/local/progress.sh"

# The module's directory in the module cache (downloaded through the proxy
# when missing): its k8s/crds holds the CRDs the controller serves.
module_dir() {
  local tmp
  tmp=$(mktemp -d) # outside any module
  (cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$MODULE@$AGENT_SANDBOX_VERSION") |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
  rmdir "$tmp"
}

if [ "${1:-}" = --crds ]; then
  d=$(module_dir)
  [ -d "$d/k8s/crds" ] || { echo "no CRDs under $d/k8s/crds" >&2; exit 1; }
  echo "$d/k8s/crds"
  exit 0
fi
if [ ! -x "$bin" ]; then
  if [ "${AGENT_SANDBOX_BUILD:-1}" = 0 ]; then
    echo "agent-sandbox $AGENT_SANDBOX_VERSION is not built: run hack/agent-sandbox.sh --print" >&2
    exit 1
  fi
  echo "[$(ts)] building agent-sandbox $AGENT_SANDBOX_VERSION from its Go module into $dir (once)" >&2
  mkdir -p "$dir"
  GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN=$dir \
    with_progress "building agent-sandbox $AGENT_SANDBOX_VERSION" "it downloads and compiles its module once, a minute or more on 2 cores" \
    go install -trimpath "$MODULE/cmd/agent-sandbox-controller@$AGENT_SANDBOX_VERSION"
fi
if [ "${1:-}" = --print ]; then echo "$bin"; exit 0; fi
exec "$bin" "$@"
