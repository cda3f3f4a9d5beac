#!/usr/bin/env bash
# Regenerates the Go and Python stubs from proto/. protoc comes from the pinned
# grpcio-tools wheel (so every machine runs the same protoc), the Go plugins
# from the versions pinned as tools in go.mod.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc

protos=(proto/sandpod/v1/*.proto)
rm -f proto/sandpod/v1/*.pb.go proto/sandpod/v1/*.binpb
# descriptors.binpb: the same files as a FileDescriptorSet with their
# comments (source info) and imports, embedded by descriptors.go, so that
# server reflection (grpcurl describe) shows the documentation; the
# descriptors protoc-gen-go registers carry no comments.
"$PY" -m grpc_tools.protoc -Iproto \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
  --go_out=proto --go_opt=paths=source_relative \
  --go-grpc_out=proto --go-grpc_opt=paths=source_relative \
  --descriptor_set_out=proto/sandpod/v1/descriptors.binpb --include_source_info --include_imports \
  "${protos[@]}"

# The proto package sandpod.v1 is the Python package sandpod.v1, so the
# generated absolute imports ("from sandpod.v1 import ...") resolve as they are.
out=clients/python/sandpod/v1
rm -f "$out"/*_pb2*.py "$out"/*_pb2*.pyi
mkdir -p "$out"
"$PY" -m grpc_tools.protoc -Iproto --python_out=clients/python --pyi_out=clients/python \
  --grpc_python_out=clients/python "${protos[@]}"
[ -f "$out/__init__.py" ] || printf '"""Generated protobuf and gRPC stubs for sandpod.v1 (do not edit)."""\n' > "$out/__init__.py"
