module github.com/sandpod/sandpod/proto/sandpod/v1/gateway

go 1.26.0

require (
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.34.0
	github.com/sandpod/sandpod/proto v0.0.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261104224025-d1e00e9f33ab // indirect
)

replace github.com/sandpod/sandpod/proto => ../../..
