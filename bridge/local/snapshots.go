package local

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/engine"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// SnapshotSandbox copies a sandbox's workspace into a new snapshot.
func (b *Backend) SnapshotSandbox(_ context.Context, req *sandpodv1.SnapshotSandboxRequest) (*sandpodv1.Snapshot, error) {
	s, err := b.e.TakeSnapshot(engine.SnapshotRequest{
		Namespace: req.GetNamespace(), Sandbox: req.GetSandbox(), Name: req.GetName(), Labels: req.GetLabels(),
		RequestID: req.GetRequestId(), IncludeMemory: req.GetIncludeMemory(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return snapshotToProto(s), nil
}

// GetSnapshot returns one snapshot.
func (b *Backend) GetSnapshot(_ context.Context, ns, name string) (*sandpodv1.Snapshot, error) {
	s, err := b.e.Snapshot(ns, name)
	if err != nil {
		return nil, toStatus(err)
	}
	return snapshotToProto(s), nil
}

// ListSnapshots returns the matching snapshots of a namespace by name.
func (b *Backend) ListSnapshots(_ context.Context, ns string, sel labels.Selector) ([]*sandpodv1.Snapshot, error) {
	var out []*sandpodv1.Snapshot
	for _, s := range b.e.Snapshots(ns, sel) {
		out = append(out, snapshotToProto(s))
	}
	return out, nil
}

// DeleteSnapshot removes a snapshot nothing uses, with its files.
func (b *Backend) DeleteSnapshot(_ context.Context, ns, name string) error {
	return toStatus(b.e.DeleteSnapshot(ns, name))
}

// ForkSandbox makes count sandboxes from a snapshot, or from a sandbox
// through an implicit snapshot of it.
func (b *Backend) ForkSandbox(ctx context.Context, req *sandpodv1.ForkSandboxRequest) ([]*sandpodv1.Sandbox, *sandpodv1.Snapshot, error) {
	sbs, snap, err := b.e.Fork(ctx, engine.ForkRequest{
		Namespace: req.GetNamespace(), Sandbox: req.GetSandbox(), Snapshot: req.GetSnapshot(), Template: req.GetTemplate(),
		Count: int(req.GetCount()), Labels: req.GetLabels(), Env: req.GetEnv(), TTL: req.GetTtl().AsDuration(),
		ShutdownPolicy: protoconv.PolicyFromProto(req.GetShutdownPolicy()), RequestID: req.GetRequestId(), NoWait: req.GetNoWait(),
	})
	if err != nil {
		return nil, nil, toStatus(err)
	}
	return sandboxesToProto(sbs), snapshotToProto(snap), nil
}

// RestoreSandbox puts a sandbox's workspace back to a snapshot.
func (b *Backend) RestoreSandbox(ctx context.Context, req *sandpodv1.RestoreSandboxRequest) (*sandpodv1.Sandbox, error) {
	return answer(b.e.Restore(ctx, req.GetNamespace(), req.GetName(), req.GetSnapshot(), req.GetNoWait()))
}
