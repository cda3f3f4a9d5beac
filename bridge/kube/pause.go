package kube

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// PauseSandbox freezes a sandbox's processes in its pod.
func (b *Backend) PauseSandbox(ctx context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	return nil, status.Error(codes.Unimplemented, "pause is not implemented on Kubernetes yet")
}
