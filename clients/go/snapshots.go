package sandpod

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// SnapshotInfo is a snapshot as the server last reported it: a saved copy
// of a sandbox's files (its workspace and volumes).
type SnapshotInfo struct {
	Name, Namespace, UID string
	Labels               map[string]string
	// Phase is "Ready", "Pending" or "Failed" (Message says why).
	Phase   string
	Message string
	// SourceSandbox is the sandbox it was taken from, Template its template
	// (the default template of sandboxes made from it).
	SourceSandbox, Template string
	SizeBytes, FileCount    int64
	// Memory: the processes' memory is in it too (false on the local
	// engine, which keeps files only).
	Memory bool
	// Volumes is what it holds, e.g. ["workspace"].
	Volumes []string
	// Storage is how sandboxes are made from it: "overlayfs", "reflink",
	// "copy" or a CSI driver's name.
	Storage    string
	CreateTime time.Time
	// UsedBy are the sandboxes ("sandbox/NAME") and warm pools
	// ("pool/NAME") that keep it from being deleted.
	UsedBy []string
	// Skipped are workspace entries it does not hold (fifos, sockets,
	// devices), with why.
	Skipped []string
}

func snapshotInfoFromProto(s *pb.Snapshot) SnapshotInfo {
	phase := map[pb.SnapshotPhase]string{
		pb.SnapshotPhase_SNAPSHOT_PHASE_PENDING: "Pending", pb.SnapshotPhase_SNAPSHOT_PHASE_READY: "Ready", pb.SnapshotPhase_SNAPSHOT_PHASE_FAILED: "Failed",
	}[s.GetPhase()]
	return SnapshotInfo{
		Name: s.GetName(), Namespace: s.GetNamespace(), UID: s.GetUid(), Labels: s.GetLabels(),
		Phase: phase, Message: s.GetMessage(), SourceSandbox: s.GetSourceSandbox(), Template: s.GetTemplate(),
		SizeBytes: s.GetSizeBytes(), FileCount: s.GetFileCount(),
		Memory:  s.GetContents() == pb.SnapshotContents_SNAPSHOT_CONTENTS_FILES_AND_MEMORY,
		Volumes: s.GetVolumes(), Storage: s.GetStorage(), CreateTime: timeFromProto(s.GetCreateTime()),
		UsedBy: s.GetUsedBy(), Skipped: s.GetSkipped(),
	}
}

// Snapshot is a handle to one snapshot. Fork and Sandbox.Restore take it;
// Client.SnapshotNamed makes one from a name without a call.
type Snapshot struct {
	c        *Client
	name, ns string

	mu   sync.Mutex
	info SnapshotInfo
}

// Name returns the snapshot's name.
func (s *Snapshot) Name() string { return s.name }

// Namespace returns the snapshot's namespace.
func (s *Snapshot) Namespace() string { return s.ns }

// Info returns the state as last reported (no call).
func (s *Snapshot) Info() SnapshotInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *Snapshot) String() string { return s.ns + "/" + s.name }

// SnapshotNamed is a handle to the snapshot of that name, without a call.
func (c *Client) SnapshotNamed(name string) *Snapshot {
	return &Snapshot{c: c, name: name, ns: c.ns, info: SnapshotInfo{Name: name, Namespace: c.ns}}
}

func (c *Client) snapshotHandle(p *pb.Snapshot) *Snapshot {
	info := snapshotInfoFromProto(p)
	ns := info.Namespace
	if ns == "" {
		ns = c.ns
	}
	return &Snapshot{c: c, name: info.Name, ns: ns, info: info}
}

// Snapshot saves the sandbox's files as a snapshot. WithName names it
// (else the server generates a name), WithLabels labels it, WithRequestID
// makes a repeated call return the same snapshot; other options are
// ignored. The sandbox keeps running; the local engine keeps files only.
func (s *Sandbox) Snapshot(ctx context.Context, opts ...SandboxOption) (*Snapshot, error) {
	cfg := newSandboxConfig(opts)
	req := &pb.SnapshotSandboxRequest{Sandbox: s.name, Namespace: s.ns, Name: cfg.name, Labels: cfg.labels, RequestId: cfg.requestID}
	var resp *pb.SnapshotSandboxResponse
	err := s.c.retry(ctx, "snapshot", func(ctx context.Context, _ int) (err error) {
		resp, err = s.c.rpc.SnapshotSandbox(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.c.snapshotHandle(resp.GetSnapshot()), nil
}

// Restore puts the sandbox's files back to snap, keeping its name. Its
// processes are stopped and it starts again on the restored files (a
// suspended one stays suspended); it waits until the sandbox runs unless
// WithNoWait.
func (s *Sandbox) Restore(ctx context.Context, snap *Snapshot, opts ...SandboxOption) error {
	cfg := newSandboxConfig(opts)
	return s.call(ctx, "restore", func(ctx context.Context, _ int) (*pb.Sandbox, error) {
		r, err := s.c.rpc.RestoreSandbox(ctx, &pb.RestoreSandboxRequest{Name: s.name, Namespace: s.ns, Snapshot: snap.Name(), NoWait: cfg.noWait})
		return r.GetSandbox(), err
	})
}

// ForkSource is what Fork makes sandboxes from: a *Snapshot, or a
// *Sandbox (then a snapshot of it is taken first).
type ForkSource interface{ forkSource(*pb.ForkSandboxRequest) }

func (s *Snapshot) forkSource(r *pb.ForkSandboxRequest) { r.Snapshot = s.name }
func (s *Sandbox) forkSource(r *pb.ForkSandboxRequest)  { r.Sandbox = s.name }

// Forks are the sandboxes of one Fork and the snapshot they were made from.
type Forks struct {
	Sandboxes []*Sandbox
	Snapshot  *Snapshot
}

// DeleteAll deletes every sandbox of the fork (not the snapshot), in
// parallel; ones already gone are fine. Use it with defer.
func (f *Forks) DeleteAll(ctx context.Context) error {
	errs := make([]error, len(f.Sandboxes))
	var wg sync.WaitGroup
	for i, sb := range f.Sandboxes {
		wg.Go(func() {
			if err := sb.Delete(ctx); err != nil && !errors.Is(err, ErrSandboxNotFound) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Fork makes n sandboxes (1..256) with the files of from, and waits until
// all run (unless WithNoWait). Options: WithLabels, WithEnv, WithTTL,
// WithShutdownPolicy, WithRequestID (a repeated call with the same id
// returns the same sandboxes and makes none more), WithForkTemplate.
func (c *Client) Fork(ctx context.Context, from ForkSource, n int, opts ...SandboxOption) (*Forks, error) {
	if n < 1 || n > 256 {
		return nil, wrapError("fork", status.Errorf(codes.InvalidArgument, "n must be between 1 and 256, got %d", n))
	}
	cfg := newSandboxConfig(opts)
	req := &pb.ForkSandboxRequest{
		Namespace: c.ns, Count: int32(n), Template: cfg.template, Labels: cfg.labels, Env: cfg.env,
		Ttl: durationToProto(cfg.ttl), ShutdownPolicy: shutdownToProto(cfg.policy), RequestId: cfg.requestID, NoWait: cfg.noWait,
	}
	from.forkSource(req)
	var resp *pb.ForkSandboxResponse
	err := c.retry(ctx, "fork", func(ctx context.Context, _ int) (err error) {
		resp, err = c.rpc.ForkSandbox(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &Forks{Snapshot: c.snapshotHandle(resp.GetSnapshot())}
	for _, p := range resp.GetSandboxes() {
		out.Sandboxes = append(out.Sandboxes, c.handle(p))
	}
	return out, nil
}

// WithForkTemplate makes Fork's sandboxes of another template than the
// snapshot's.
func WithForkTemplate(template string) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.template = template })
}

// WithSnapshot makes Claim and Create start the sandbox with a
// snapshot's files: Claim takes a member of a warm pool made from it, or
// starts one cold from it. The template may then be "" (the snapshot's).
func WithSnapshot(snap *Snapshot) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.snapshot = snap.Name() })
}

// GetSnapshot returns the snapshot of that name.
func (c *Client) GetSnapshot(ctx context.Context, name string) (*Snapshot, error) {
	s := c.SnapshotNamed(name)
	_, err := s.Refresh(ctx)
	return s, err
}

// Snapshots returns every snapshot of the namespace (all pages), filtered
// by WithLabelSelector when given.
func (c *Client) Snapshots(ctx context.Context, opts ...ListOption) ([]*Snapshot, error) {
	cfg := newListConfig(opts)
	var out []*Snapshot
	token := cfg.pageToken
	for {
		req := &pb.ListSnapshotsRequest{Namespace: c.ns, LabelSelector: cfg.selector, PageSize: int32(cfg.pageSize), PageToken: token}
		var resp *pb.ListSnapshotsResponse
		err := c.retry(ctx, "list snapshots", func(ctx context.Context, _ int) (err error) {
			resp, err = c.rpc.ListSnapshots(ctx, req)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, p := range resp.GetSnapshots() {
			out = append(out, c.snapshotHandle(p))
		}
		if token = resp.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
}

// Refresh asks the server for the snapshot's state and returns it.
func (s *Snapshot) Refresh(ctx context.Context) (SnapshotInfo, error) {
	var resp *pb.GetSnapshotResponse
	err := s.c.retry(ctx, "get snapshot", func(ctx context.Context, _ int) (err error) {
		resp, err = s.c.rpc.GetSnapshot(ctx, &pb.GetSnapshotRequest{Name: s.name, Namespace: s.ns})
		return err
	})
	if err != nil {
		return s.Info(), err
	}
	s.mu.Lock()
	s.info = snapshotInfoFromProto(resp.GetSnapshot())
	s.mu.Unlock()
	return s.Info(), nil
}

// Delete deletes the snapshot and its files. It fails with
// ErrSnapshotInUse while sandboxes or warm pools use it.
func (s *Snapshot) Delete(ctx context.Context) error {
	return s.c.retry(ctx, "delete snapshot", func(ctx context.Context, attempt int) error {
		_, err := s.c.rpc.DeleteSnapshot(ctx, &pb.DeleteSnapshotRequest{Name: s.name, Namespace: s.ns})
		if attempt > 1 && status.Code(err) == codes.NotFound {
			return nil // an earlier attempt deleted it and its answer was lost
		}
		return err
	})
}
