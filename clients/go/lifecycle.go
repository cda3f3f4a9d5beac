package sandpod

import (
	"context"
	"time"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SandboxOption configures Claim, Create and Resume.
type SandboxOption interface{ applySandbox(*sandboxConfig) }

type sandboxConfig struct {
	name         string
	labels       map[string]string
	env          map[string]string
	ttl          time.Duration
	shutdownTime time.Time
	policy       ShutdownPolicy
	requestID    string
	noWait       bool
	concurrency  int    // ClaimMany
	snapshot     string // WithSnapshot
	template     string // WithForkTemplate
	restart      *bool  // WithRestartOnFailure
	lease        leaseConfig
}

type sandboxOptionFunc func(*sandboxConfig)

func (f sandboxOptionFunc) applySandbox(c *sandboxConfig) { f(c) }

func newSandboxConfig(opts []SandboxOption) *sandboxConfig {
	cfg := &sandboxConfig{}
	for _, o := range opts {
		o.applySandbox(cfg)
	}
	if cfg.requestID == "" {
		cfg.requestID = newRequestID()
	}
	return cfg
}

// WithName names the sandbox (Create only; a DNS-1123 label). The server
// generates a name from the template's when none is given.
func WithName(name string) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.name = name })
}

// WithLabels sets labels on the sandbox (Claim, Create).
func WithLabels(labels map[string]string) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.labels = labels })
}

// WithTTL sets the sandbox's shutdown time to now + d (Claim, Create). The
// template's default applies when neither WithTTL nor WithShutdownTime is
// given.
func WithTTL(d time.Duration) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.ttl = d })
}

// WithShutdownTime sets the sandbox's shutdown time (Claim, Create).
func WithShutdownTime(t time.Time) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.shutdownTime = t })
}

// WithShutdownPolicy says what happens at the shutdown time (Claim,
// Create).
func WithShutdownPolicy(p ShutdownPolicy) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.policy = p })
}

// WithRequestID sets the idempotency key of a Claim or Create. By default
// each call generates one and sends it on every retry of that call; give
// your own to make repeated calls (across restarts of your program)
// return the same sandbox.
func WithRequestID(id string) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.requestID = id })
}

// WithNoWait makes Create and Resume return once the server accepted the
// call, before the sandbox is ready. See Sandbox.WaitReady.
func WithNoWait() SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.noWait = true })
}

// WithRestartOnFailure says whether the sandbox's workload is replaced
// (same name and files) when it exits non-zero, instead of the sandbox
// being reported Failed (Claim, Create). Without it the template's default
// applies.
func WithRestartOnFailure(on bool) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.restart = &on })
}

// Claim hands out a ready sandbox of the template: a warm one from the
// template's pool when one is ready, else a cold start. A retried Claim
// never hands out a second sandbox.
func (c *Client) Claim(ctx context.Context, template string, opts ...SandboxOption) (*Sandbox, error) {
	cfg := newSandboxConfig(opts)
	req := &pb.ClaimSandboxRequest{
		Template:       template,
		Namespace:      c.ns,
		Labels:         cfg.labels,
		Env:            cfg.env,
		Ttl:            durationToProto(cfg.ttl),
		ShutdownTime:   timeToProto(cfg.shutdownTime),
		ShutdownPolicy: shutdownToProto(cfg.policy),
		RequestId:      cfg.requestID,
		Snapshot:       cfg.snapshot,
	}
	req.RestartOnFailure = cfg.restart
	req.Lease = durationToProto(cfg.lease.d)
	var resp *pb.ClaimSandboxResponse
	err := c.retry(ctx, "claim", func(ctx context.Context, _ int) (err error) {
		resp, err = c.rpc.ClaimSandbox(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	s := c.handle(resp.GetSandbox())
	s.warm = resp.GetWarm()
	s.startRenewing(cfg.lease.ctx)
	return s, nil
}

// Create starts a sandbox cold from the template and waits until it is
// ready (unless WithNoWait). A retried Create never starts a second
// sandbox.
func (c *Client) Create(ctx context.Context, template string, opts ...SandboxOption) (*Sandbox, error) {
	cfg := newSandboxConfig(opts)
	req := &pb.CreateSandboxRequest{
		Template:       template,
		Namespace:      c.ns,
		Name:           cfg.name,
		Labels:         cfg.labels,
		Env:            cfg.env,
		Ttl:            durationToProto(cfg.ttl),
		ShutdownTime:   timeToProto(cfg.shutdownTime),
		ShutdownPolicy: shutdownToProto(cfg.policy),
		RequestId:      cfg.requestID,
		NoWait:         cfg.noWait,
		Snapshot:       cfg.snapshot,
	}
	req.RestartOnFailure = cfg.restart
	req.Lease = durationToProto(cfg.lease.d)
	var resp *pb.CreateSandboxResponse
	err := c.retry(ctx, "create", func(ctx context.Context, _ int) (err error) {
		resp, err = c.rpc.CreateSandbox(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	s := c.handle(resp.GetSandbox())
	s.startRenewing(cfg.lease.ctx)
	return s, nil
}

// Get returns the sandbox with the given name (ErrSandboxNotFound if none).
func (c *Client) Get(ctx context.Context, name string) (*Sandbox, error) {
	s := c.Sandbox(name)
	if _, err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Suspend stops the sandbox's processes and keeps its files and name.
func (c *Client) Suspend(ctx context.Context, name string) (*Sandbox, error) {
	s := c.Sandbox(name)
	return s, s.Suspend(ctx)
}

// Resume starts a suspended (or expired and retained) sandbox again and
// waits until it is ready (unless WithNoWait).
func (c *Client) Resume(ctx context.Context, name string, opts ...SandboxOption) (*Sandbox, error) {
	s := c.Sandbox(name)
	return s, s.Resume(ctx, opts...)
}

// Extend moves the sandbox's shutdown time to now + ttl.
func (c *Client) Extend(ctx context.Context, name string, ttl time.Duration) (*Sandbox, error) {
	s := c.Sandbox(name)
	return s, s.Extend(ctx, ttl)
}

// Delete deletes the sandbox and its files. Deleting a sandbox that is
// already gone returns ErrSandboxNotFound, except on a retry of this same
// call (the first attempt did it).
func (c *Client) Delete(ctx context.Context, name string) error {
	return c.Sandbox(name).Delete(ctx)
}

func (c *Client) handle(p *pb.Sandbox) *Sandbox {
	info := infoFromProto(p)
	ns := info.Namespace
	if ns == "" {
		ns = c.ns
	}
	return &Sandbox{c: c, name: info.Name, ns: ns, info: info}
}

// suspend, resume, extend and delete: the calls behind the Sandbox handle.

func (s *Sandbox) call(ctx context.Context, op string, fn func(ctx context.Context, attempt int) (*pb.Sandbox, error)) error {
	return s.c.retry(ctx, op, func(ctx context.Context, attempt int) error {
		p, err := fn(ctx, attempt)
		if err == nil && p != nil {
			s.setInfo(infoFromProto(p))
		}
		return err
	})
}

// Refresh asks the server for the sandbox's state and returns it.
func (s *Sandbox) Refresh(ctx context.Context) (Info, error) {
	err := s.call(ctx, "get", func(ctx context.Context, _ int) (*pb.Sandbox, error) {
		r, err := s.c.rpc.GetSandbox(ctx, &pb.GetSandboxRequest{Name: s.name, Namespace: s.ns})
		return r.GetSandbox(), err
	})
	return s.Info(), err
}

// Suspend stops the sandbox's processes and keeps its files and name.
func (s *Sandbox) Suspend(ctx context.Context) error {
	return s.call(ctx, "suspend", func(ctx context.Context, _ int) (*pb.Sandbox, error) {
		r, err := s.c.rpc.SuspendSandbox(ctx, &pb.SuspendSandboxRequest{Name: s.name, Namespace: s.ns})
		return r.GetSandbox(), err
	})
}

// ReasonSandboxPaused is the Error.Reason of an exec or file call refused
// (ErrFailedPrecondition) because the sandbox is paused: Resume it first.
const ReasonSandboxPaused = "SANDBOX_PAUSED"

// Pause freezes the sandbox's processes with their memory (PhasePaused);
// Resume thaws them where they stopped. While paused, exec and file calls
// fail with ErrFailedPrecondition and Error.Reason ReasonSandboxPaused
// (unless the template auto-resumes). Pausing a paused sandbox changes
// nothing; a suspended one or an unclaimed pool member is refused
// (ErrFailedPrecondition).
func (s *Sandbox) Pause(ctx context.Context) error {
	return s.call(ctx, "pause", func(ctx context.Context, _ int) (*pb.Sandbox, error) {
		r, err := s.c.rpc.PauseSandbox(ctx, &pb.PauseSandboxRequest{Name: s.name, Namespace: s.ns})
		return r.GetSandbox(), err
	})
}

// Resume starts a suspended sandbox again and waits until it is ready
// (unless WithNoWait; other options are ignored), or thaws a paused one.
func (s *Sandbox) Resume(ctx context.Context, opts ...SandboxOption) error {
	cfg := &sandboxConfig{}
	for _, o := range opts {
		o.applySandbox(cfg)
	}
	return s.call(ctx, "resume", func(ctx context.Context, _ int) (*pb.Sandbox, error) {
		r, err := s.c.rpc.ResumeSandbox(ctx, &pb.ResumeSandboxRequest{Name: s.name, Namespace: s.ns, NoWait: cfg.noWait})
		return r.GetSandbox(), err
	})
}

// Extend moves the sandbox's shutdown time to now + ttl.
func (s *Sandbox) Extend(ctx context.Context, ttl time.Duration) error {
	return s.extend(ctx, &pb.ExtendSandboxRequest{Name: s.name, Namespace: s.ns, Ttl: durationToProto(ttl)})
}

// ExtendUntil moves the sandbox's shutdown time to t.
func (s *Sandbox) ExtendUntil(ctx context.Context, t time.Time) error {
	return s.extend(ctx, &pb.ExtendSandboxRequest{Name: s.name, Namespace: s.ns, ShutdownTime: timeToProto(t)})
}

func (s *Sandbox) extend(ctx context.Context, req *pb.ExtendSandboxRequest) error {
	return s.call(ctx, "extend", func(ctx context.Context, _ int) (*pb.Sandbox, error) {
		r, err := s.c.rpc.ExtendSandbox(ctx, req)
		return r.GetSandbox(), err
	})
}

// Delete deletes the sandbox and its files.
func (s *Sandbox) Delete(ctx context.Context) error {
	s.StopRenewing()
	return s.call(ctx, "delete", func(ctx context.Context, attempt int) (*pb.Sandbox, error) {
		_, err := s.c.rpc.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: s.name, Namespace: s.ns})
		if attempt > 1 && status.Code(err) == codes.NotFound {
			// An earlier attempt deleted it and its answer was lost.
			return nil, nil
		}
		return nil, err
	})
}

// WaitReady polls the sandbox until it is Running. It fails with
// ErrFailedPrecondition when the sandbox reaches a phase it will not leave
// by itself (Failed, Suspended, Expired, Terminating) and ends with ctx.
func (s *Sandbox) WaitReady(ctx context.Context) error {
	delay := 50 * time.Millisecond
	for {
		info, err := s.Refresh(ctx)
		if err != nil {
			return err
		}
		switch info.Phase {
		case PhaseRunning:
			return nil
		case PhaseFailed, PhaseSuspended, PhaseExpired, PhaseTerminating:
			return wrapError("wait", status.Errorf(codes.FailedPrecondition, "sandbox %s is %s: %s", s.name, info.Phase, info.Message))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return wrapError("wait", ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}
