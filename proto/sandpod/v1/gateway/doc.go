// Package gateway is the HTTP/JSON face of sandpod.v1.SandboxService:
// sandbox_service.pb.gw.go (grpc-gateway) and sandbox_service.swagger.json
// (its OpenAPI v2 document) are generated from the .proto files by
// hack/generate-proto.sh and drift-checked by hack/check-generated.sh.
// It is a package and a module of its own so that the clients, which import
// sandpodv1 (the module github.com/sandpod/sandpod/proto), neither link the
// gateway runtime nor have grpc-gateway in their module graph.
// bridge/httpapi serves it.
package gateway

import _ "embed"

// OpenAPI is the generated OpenAPI v2 document of SandboxService, every
// RPC included (an RPC without a google.api.http option at
// POST /sandpod.v1.SandboxService/<Method>).
//
//go:embed sandbox_service.swagger.json
var OpenAPI []byte
