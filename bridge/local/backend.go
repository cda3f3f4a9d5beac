// Package local is the bridge's Backend over the local engine
// (core/engine): it unpacks the contract's requests into the engine's
// types, and turns the engine's answers and typed errors into the
// contract's messages and gRPC statuses. bridge/kube is its counterpart on
// Kubernetes.
package local

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/engine"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Backend serves the bridge from a local engine.
type Backend struct{ e *engine.Engine }

// New returns the Backend of e.
func New(e *engine.Engine) *Backend { return &Backend{e: e} }

// sandboxRequest is what CreateSandboxRequest and ClaimSandboxRequest share.
type sandboxRequest interface {
	GetNamespace() string
	GetTemplate() string
	GetLabels() map[string]string
	GetEnv() map[string]string
	GetTtl() *durationpb.Duration
	GetShutdownPolicy() sandpodv1.ShutdownPolicy
	GetRequestId() string
	GetSnapshot() string
	GetLease() *durationpb.Duration
	GetShutdownTime() *timestamppb.Timestamp
}

// request unpacks a create or claim; restart is its restart_on_failure
// (nil when unset).
func request(req sandboxRequest, restart *bool) engine.Request {
	r := engine.Request{
		Namespace: req.GetNamespace(), Template: req.GetTemplate(), Labels: req.GetLabels(), Env: req.GetEnv(),
		TTL: req.GetTtl().AsDuration(), ShutdownPolicy: protoconv.PolicyFromProto(req.GetShutdownPolicy()),
		RequestID: req.GetRequestId(), Snapshot: req.GetSnapshot(), RestartOnFailure: restart, Lease: leaseOf(req.GetLease()),
	}
	if req.GetShutdownTime() != nil {
		t := req.GetShutdownTime().AsTime()
		r.ShutdownTime = &t
	}
	return r
}

// leaseOf is a request's lease, nil when unset.
func leaseOf(d *durationpb.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	v := d.AsDuration()
	return &v
}

func answer(s engine.Sandbox, err error) (*sandpodv1.Sandbox, error) {
	if err != nil {
		return nil, toStatus(err)
	}
	return sandboxToProto(s), nil
}

// CreateSandbox starts a sandbox cold from a template.
func (b *Backend) CreateSandbox(ctx context.Context, req *sandpodv1.CreateSandboxRequest) (*sandpodv1.Sandbox, error) {
	r := request(req, req.RestartOnFailure)
	r.Name = req.GetName()
	return answer(b.e.Create(ctx, r, req.GetNoWait()))
}

// ClaimSandbox adopts a ready warm pool member of the template, or starts a
// sandbox cold when none is ready (engine.Claim).
func (b *Backend) ClaimSandbox(ctx context.Context, req *sandpodv1.ClaimSandboxRequest) (*sandpodv1.Sandbox, bool, error) {
	r := request(req, req.RestartOnFailure)
	s, warm, err := b.e.Claim(ctx, r)
	if err != nil {
		return nil, false, toStatus(err)
	}
	return sandboxToProto(s), warm, nil
}

// GetSandbox returns one sandbox.
func (b *Backend) GetSandbox(_ context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	return answer(b.e.Get(ns, name))
}

// ListSandboxes returns matching sandboxes sorted by name.
func (b *Backend) ListSandboxes(_ context.Context, ns string, sel labels.Selector, includePool bool) ([]*sandpodv1.Sandbox, error) {
	return sandboxesToProto(b.e.List(ns, sel, includePool)), nil
}

// WatchSandboxes streams changes of matching sandboxes until ctx ends.
func (b *Backend) WatchSandboxes(ctx context.Context, ns string, sel labels.Selector, includePool, sendInitial bool) (<-chan *sandpodv1.WatchSandboxesResponse, error) {
	in := b.e.Watch(ctx, ns, sel, includePool, sendInitial)
	out := make(chan *sandpodv1.WatchSandboxesResponse, 16)
	go func() {
		defer close(out)
		for ev := range in {
			select {
			case out <- &sandpodv1.WatchSandboxesResponse{Type: eventType[ev.Type], Sandbox: sandboxToProto(ev.Sandbox)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

var eventType = map[engine.EventType]sandpodv1.WatchSandboxesResponse_EventType{
	engine.Added:    sandpodv1.WatchSandboxesResponse_EVENT_TYPE_ADDED,
	engine.Modified: sandpodv1.WatchSandboxesResponse_EVENT_TYPE_MODIFIED,
	engine.Deleted:  sandpodv1.WatchSandboxesResponse_EVENT_TYPE_DELETED,
}

// SuspendSandbox stops the sandbox's processes; its files and name stay.
func (b *Backend) SuspendSandbox(_ context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	return answer(b.e.Suspend(ns, name))
}

// ResumeSandbox starts a suspended (or failed) sandbox again, or thaws a
// paused one.
func (b *Backend) ResumeSandbox(ctx context.Context, ns, name string, wait bool) (*sandpodv1.Sandbox, error) {
	return answer(b.e.Resume(ctx, ns, name, wait))
}

// PauseSandbox freezes a running sandbox's processes with their memory.
func (b *Backend) PauseSandbox(_ context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	return answer(b.e.Pause(ns, name))
}

// ExtendSandbox moves the shutdown time.
func (b *Backend) ExtendSandbox(_ context.Context, ns, name string, shutdown time.Time) (*sandpodv1.Sandbox, error) {
	return answer(b.e.Extend(ns, name, shutdown))
}

// DeleteSandbox stops a sandbox and removes it with its files.
func (b *Backend) DeleteSandbox(_ context.Context, ns, name string) error {
	return toStatus(b.e.Delete(ns, name))
}

// Agent returns the agent endpoint of a running sandbox (engine.Agent).
func (b *Backend) Agent(ctx context.Context, ns, name string) (agentconn.Endpoint, error) {
	ep, err := b.e.Agent(ctx, ns, name)
	if err != nil {
		return agentconn.Endpoint{}, toStatus(err)
	}
	return agentconn.Endpoint{Target: ep.Target, Secret: ep.Secret, Env: ep.Env, Done: ep.Done}, nil
}

// ListTemplates returns the templates of a namespace.
func (b *Backend) ListTemplates(_ context.Context, ns string) ([]*sandpodv1.Template, error) {
	var out []*sandpodv1.Template
	for _, t := range b.e.Templates(ns) {
		out = append(out, templateToProto(t))
	}
	return out, nil
}

// ListWarmPools returns the pools of a namespace.
func (b *Backend) ListWarmPools(_ context.Context, ns string) ([]*sandpodv1.WarmPool, error) {
	var out []*sandpodv1.WarmPool
	for _, p := range b.e.Pools(ns) {
		out = append(out, poolToProto(p))
	}
	return out, nil
}

// GetWarmPool returns one pool with its ready and pending counts.
func (b *Backend) GetWarmPool(_ context.Context, ns, name string) (*sandpodv1.WarmPool, error) {
	p, err := b.e.Pool(ns, name)
	if err != nil {
		return nil, toStatus(err)
	}
	return poolToProto(p), nil
}

// ScaleWarmPool sets a pool's size; it survives a restart.
func (b *Backend) ScaleWarmPool(_ context.Context, ns, name string, replicas int32) (*sandpodv1.WarmPool, error) {
	p, err := b.e.ScalePool(ns, name, replicas)
	if err != nil {
		return nil, toStatus(err)
	}
	return poolToProto(p), nil
}

// RenewLease renews a sandbox's lease.
func (b *Backend) RenewLease(_ context.Context, ns, name string) (time.Time, error) {
	t, err := b.e.RenewLease(ns, name)
	return t, toStatus(err)
}
