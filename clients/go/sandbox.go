package sandpod

import (
	"context"
	"sync"
)

// Sandbox is a handle to one sandbox: its name and namespace, the state
// the server last reported, and the calls that act on it (Run, Start,
// Files, Suspend, Resume, Extend, Delete). Handles are cheap and safe for
// concurrent use; a handle never owns the sandbox, so dropping it leaks
// nothing and deleting is always explicit (or left to the shutdown time).
type Sandbox struct {
	c    *Client
	name string
	ns   string

	mu    sync.Mutex
	info  Info
	warm  bool
	renew context.CancelFunc // stops the lease renewal (lease.go)
}

// Name returns the sandbox's name.
func (s *Sandbox) Name() string { return s.name }

// Namespace returns the sandbox's namespace.
func (s *Sandbox) Namespace() string { return s.ns }

// Info returns the state the server last reported, kept true by the
// handle's own calls: every call that returns the sandbox (Claim, Create,
// Get, Refresh, Suspend, Pause, Resume, Extend, Restore) sets it; an exec,
// file, code or preview call that went through while the handle last saw
// the sandbox paused, suspended, expired or starting (the server resumes
// one whose template auto-resumes) fetches it again, one GetSandbox then
// only; a refusal whose Error.Reason names the phase (ReasonSandboxPaused,
// ...) sets Phase. Changes made elsewhere (another client, an idle pause)
// show after Refresh.
func (s *Sandbox) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// Warm reports whether Claim adopted a ready warm pool member (false for a
// cold start, and for handles not made by Claim).
func (s *Sandbox) Warm() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.warm
}

func (s *Sandbox) setInfo(info Info) {
	s.mu.Lock()
	s.info = info
	s.mu.Unlock()
}

// String returns "namespace/name".
func (s *Sandbox) String() string { return s.ns + "/" + s.name }
