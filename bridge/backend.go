// Package bridge is the gRPC server of sandpod's public contract. It checks
// every request at the edge, then serves lifecycle calls from a Backend (the
// local engine or Kubernetes) and forwards exec and file calls to the
// sandbox's agent, the same way for both backends.
package bridge

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Backend is where sandboxes live. Requests reaching it are already
// validated; it returns gRPC status errors.
type Backend interface {
	CreateSandbox(ctx context.Context, req *sandpodv1.CreateSandboxRequest) (*sandpodv1.Sandbox, error)
	// ClaimSandbox also reports whether a warm pool member was adopted.
	ClaimSandbox(ctx context.Context, req *sandpodv1.ClaimSandboxRequest) (*sandpodv1.Sandbox, bool, error)
	GetSandbox(ctx context.Context, namespace, name string) (*sandpodv1.Sandbox, error)
	// ListSandboxes returns every match sorted by name; the bridge pages.
	ListSandboxes(ctx context.Context, namespace string, sel labels.Selector, includePool bool) ([]*sandpodv1.Sandbox, error)
	// WatchSandboxes sends events until ctx ends; the channel closes then.
	WatchSandboxes(ctx context.Context, namespace string, sel labels.Selector, includePool, sendInitial bool) (<-chan *sandpodv1.WatchSandboxesResponse, error)
	SuspendSandbox(ctx context.Context, namespace, name string) (*sandpodv1.Sandbox, error)
	// ResumeSandbox also thaws a paused sandbox.
	ResumeSandbox(ctx context.Context, namespace, name string, wait bool) (*sandpodv1.Sandbox, error)
	// PauseSandbox freezes a running sandbox's processes with their memory.
	PauseSandbox(ctx context.Context, namespace, name string) (*sandpodv1.Sandbox, error)
	ExtendSandbox(ctx context.Context, namespace, name string, shutdown time.Time) (*sandpodv1.Sandbox, error)
	DeleteSandbox(ctx context.Context, namespace, name string) error

	ListTemplates(ctx context.Context, namespace string) ([]*sandpodv1.Template, error)
	ListWarmPools(ctx context.Context, namespace string) ([]*sandpodv1.WarmPool, error)
	GetWarmPool(ctx context.Context, namespace, name string) (*sandpodv1.WarmPool, error)
	ScaleWarmPool(ctx context.Context, namespace, name string, replicas int32) (*sandpodv1.WarmPool, error)

	// Agent says how to reach a sandbox's agent, resuming a suspended
	// sandbox first when its template auto-resumes (FailedPrecondition
	// otherwise), and records the activity for idle suspend.
	Agent(ctx context.Context, namespace, name string) (agentconn.Endpoint, error)

	Snapshots
	Leases
}

// Snapshots are the snapshot calls of a Backend (snapshot.proto). A backend
// that cannot serve them yet answers UNIMPLEMENTED, naming what is missing.
type Snapshots interface {
	SnapshotSandbox(ctx context.Context, req *sandpodv1.SnapshotSandboxRequest) (*sandpodv1.Snapshot, error)
	GetSnapshot(ctx context.Context, namespace, name string) (*sandpodv1.Snapshot, error)
	// ListSnapshots returns every match sorted by name; the bridge pages.
	ListSnapshots(ctx context.Context, namespace string, sel labels.Selector) ([]*sandpodv1.Snapshot, error)
	DeleteSnapshot(ctx context.Context, namespace, name string) error
	// ForkSandbox returns the sandboxes in request order and the snapshot
	// they were made from.
	ForkSandbox(ctx context.Context, req *sandpodv1.ForkSandboxRequest) ([]*sandpodv1.Sandbox, *sandpodv1.Snapshot, error)
	RestoreSandbox(ctx context.Context, req *sandpodv1.RestoreSandboxRequest) (*sandpodv1.Sandbox, error)
}
