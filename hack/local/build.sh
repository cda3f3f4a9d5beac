#!/usr/bin/env bash
# Builds the sandpod binary and, beside it, the small agent that sandboxes
# run (cmd/sandpod-agent: bin/sandpod -> bin/sandpod-agent, bin/sandpod-race
# -> bin/sandpod-agent-race, the names the engine looks for). A first build is long and go build is silent
# while it compiles, so this says what is going on: the modules it
# downloads ("go: downloading ..."), then a line every 30 s until it is done.
#
# usage: hack/local/build.sh OUTPUT [go build flags...]
set -euo pipefail
cd "$(dirname "$0")/../.."
source hack/local/progress.sh
out=${1:?usage: hack/local/build.sh OUTPUT [go build flags...]}
shift
echo "[$(ts)] building $out" >&2
with_progress "building $out" \
  "a first build downloads the Go modules it needs and compiles about 900 packages: 2 to 4 minutes on 2 cores; later builds take seconds" \
  "${GO:-go}" build "$@" -o "$out" ./cmd/sandpod
base=$(basename "$out")
agent=$(dirname "$out")/sandpod-agent${base#sandpod}
with_progress "building $agent" \
  "the agent is a subset of the packages above: seconds" \
  "${GO:-go}" build "$@" -o "$agent" ./cmd/sandpod-agent
