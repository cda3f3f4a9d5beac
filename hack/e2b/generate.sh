#!/usr/bin/env bash
# Generates the Go types and Connect stubs of envd's process and filesystem
# services (bridge/e2b/envd) from the descriptors in the pinned e2b package
# (pyproject.toml's dev extras): the .proto files are not published as a module,
# and e2b's generated Python carries them as serialized FileDescriptorProtos
# (hack/e2b/descriptors.py). protoc comes from the pinned grpcio-tools wheel,
# the plugins from the versions pinned as tools in go.mod.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
pin=$(grep -o '"e2b==[0-9.]*' pyproject.toml | tr -d '"')
"$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('e2b') != '${pin#e2b==}')" 2>/dev/null ||
  "$PY" -m pip install --quiet "$pin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$tmp/protoc-gen-connect-go" connectrpc.com/connect/cmd/protoc-gen-connect-go
"$PY" hack/e2b/descriptors.py "$tmp/envd.binpb"
out=bridge/e2b/envd
rm -rf "$out/process" "$out/filesystem"
mkdir -p "$out"
"$PY" -m grpc_tools.protoc --descriptor_set_in="$tmp/envd.binpb" \
  --plugin=protoc-gen-go="$tmp/protoc-gen-go" --plugin=protoc-gen-connect-go="$tmp/protoc-gen-connect-go" \
  --go_out="$tmp" --go_opt=module=github.com/sandpod/sandpod \
  --connect-go_out="$tmp" --connect-go_opt=module=github.com/sandpod/sandpod \
  process/process.proto filesystem/filesystem.proto
cp -r "$tmp/bridge/e2b/envd/." "$out/"
