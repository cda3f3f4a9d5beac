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
go build -o "$bin/protoc-gen-grpc-gateway" github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway
go build -o "$bin/protoc-gen-openapiv2" github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2

protos=(proto/sandpod/v1/*.proto)
# google/api/{annotations,http}.proto (the google.api.http option) are
# vendored in proto/third_party, see its README.
inc=(-Iproto -Iproto/third_party)
rm -f proto/sandpod/v1/*.pb.go proto/sandpod/v1/*.binpb proto/sandpod/v1/gateway/*.pb.gw.go proto/sandpod/v1/gateway/*.swagger.json
# descriptors.binpb: the same files as a FileDescriptorSet with their
# comments (source info) and imports, embedded by descriptors.go, so that
# server reflection (grpcurl describe) shows the documentation; the
# descriptors protoc-gen-go registers carry no comments.
"$PY" -m grpc_tools.protoc "${inc[@]}" \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
  --go_out=proto --go_opt=paths=source_relative \
  --go-grpc_out=proto --go-grpc_opt=paths=source_relative \
  --descriptor_set_out=proto/sandpod/v1/descriptors.binpb --include_source_info --include_imports \
  "${protos[@]}"

# The HTTP/JSON gateway of SandboxService (only: the agent's own service is
# not public) and its OpenAPI document. generate_unbound_methods serves an
# RPC without a google.api.http option too, at POST /sandpod.v1.SandboxService/Method,
# so a new RPC is never left out of HTTP. standalone puts the gateway in a
# package of its own (proto/sandpod/v1/gateway, named gateway; a module of its
# own too, go.mod kept by hand), so that the clients importing sandpodv1 (the
# module proto/) do not link or require the gateway runtime.
gw=$(mktemp -d)
trap 'rm -rf "$bin" "$gw"' EXIT
"$PY" -m grpc_tools.protoc "${inc[@]}" \
  --plugin=protoc-gen-grpc-gateway="$bin/protoc-gen-grpc-gateway" --plugin=protoc-gen-openapiv2="$bin/protoc-gen-openapiv2" \
  --grpc-gateway_out="$gw" --grpc-gateway_opt=paths=source_relative,standalone=true,generate_unbound_methods=true,omit_package_doc=true \
  --openapiv2_out="$gw" --openapiv2_opt=generate_unbound_methods=true,openapi_naming_strategy=simple,preserve_rpc_order=true \
  proto/sandpod/v1/sandbox_service.proto
mkdir -p proto/sandpod/v1/gateway
sed 's/^package sandpodv1$/package gateway/' "$gw/sandpod/v1/sandbox_service.pb.gw.go" > proto/sandpod/v1/gateway/sandbox_service.pb.gw.go
cp "$gw/sandpod/v1/sandbox_service.swagger.json" proto/sandpod/v1/gateway/

# The proto package sandpod.v1 is the Python package sandpod.v1, so the
# generated absolute imports ("from sandpod.v1 import ...") resolve as they are.
out=clients/python/sandpod/v1
rm -f "$out"/*_pb2*.py "$out"/*_pb2*.pyi
mkdir -p "$out"
"$PY" -m grpc_tools.protoc "${inc[@]}" --python_out=clients/python --pyi_out=clients/python \
  --grpc_python_out=clients/python "${protos[@]}"
[ -f "$out/__init__.py" ] || printf '"""Generated protobuf and gRPC stubs for sandpod.v1 (do not edit)."""\n' > "$out/__init__.py"

# envd's services for the E2B front door (bridge/e2b/envd), from the pinned
# e2b package's descriptors.
PYTHON="$PY" hack/e2b/generate.sh
