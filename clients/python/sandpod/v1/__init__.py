"""Generated protobuf and gRPC stubs for sandpod.v1 (do not edit)."""
