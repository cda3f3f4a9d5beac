package kube

import (
	"context"

	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// errNoSnapshots is the answer of every snapshot call on Kubernetes until
// the pieces that serve them exist: a SandboxSnapshot resource (with a
// finalizer that protects one in use), a CSI VolumeSnapshot of the
// workspace volume, and forks and restores as volumes whose dataSource is
// that VolumeSnapshot.
var errNoSnapshots = errinfo.New(codes.Unimplemented, errinfo.ReasonSnapshotsUnsupported, nil,
	"snapshots are not served by the Kubernetes backend yet: they need the SandboxSnapshot resource and CSI VolumeSnapshots of the workspace volume "+
		"(a CSI driver with snapshot support and the external-snapshotter's snapshot-controller); the local engine (sandpod serve) serves them")

// SnapshotSandbox is not served yet (errNoSnapshots).
func (b *Backend) SnapshotSandbox(context.Context, *sandpodv1.SnapshotSandboxRequest) (*sandpodv1.Snapshot, error) {
	return nil, errNoSnapshots
}

// GetSnapshot is not served yet (errNoSnapshots).
func (b *Backend) GetSnapshot(context.Context, string, string) (*sandpodv1.Snapshot, error) {
	return nil, errNoSnapshots
}

// ListSnapshots is not served yet (errNoSnapshots).
func (b *Backend) ListSnapshots(context.Context, string, labels.Selector) ([]*sandpodv1.Snapshot, error) {
	return nil, errNoSnapshots
}

// DeleteSnapshot is not served yet (errNoSnapshots).
func (b *Backend) DeleteSnapshot(context.Context, string, string) error { return errNoSnapshots }

// ForkSandbox is not served yet (errNoSnapshots).
func (b *Backend) ForkSandbox(context.Context, *sandpodv1.ForkSandboxRequest) ([]*sandpodv1.Sandbox, *sandpodv1.Snapshot, error) {
	return nil, nil, errNoSnapshots
}

// RestoreSandbox is not served yet (errNoSnapshots).
func (b *Backend) RestoreSandbox(context.Context, *sandpodv1.RestoreSandboxRequest) (*sandpodv1.Sandbox, error) {
	return nil, errNoSnapshots
}
