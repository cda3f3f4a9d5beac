// Package preview is the bridge's port previews: the registry of exposed
// ports (preview.go, kept by the backend when it is an ExposureStore, else
// in memory and a state file), the ExposePort, UnexposePort and
// ListExposedPorts calls, the signed preview URLs (previewsign.go), the
// HTTP listener that serves an exposed port (previewhttp.go) and the
// tunnel it dials through, an agent's Dial stream (tunnel.go).
package preview

import (
	"context"
	"time"

	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Sandboxes is what previews read of the bridge's backend. A backend that
// keeps the exposures itself (Kubernetes: in the Sandbox's status) is an
// ExposureStore too.
type Sandboxes interface {
	GetSandbox(ctx context.Context, ns, name string) (*sandpodv1.Sandbox, error)
}

// Host is what the previews borrow from the bridge's server.
type Host struct {
	Backend Sandboxes
	// AgentFor is a client of a sandbox's agent, the context carrying its
	// secret, its endpoint and the release to call when the call ends.
	AgentFor func(ctx context.Context, ns, name string) (sandpodv1.AgentServiceClient, context.Context, agentconn.Endpoint, func(), error)
	// AgentError turns the error of a call to the agent of sandbox name
	// into the status the caller gets.
	AgentError func(name string, err error) error
	// BeforeDeadline bounds a call to an agent a little before ctx's
	// deadline, so a silent agent gets a status that names the sandbox.
	BeforeDeadline func(ctx context.Context) (context.Context, context.CancelFunc)
	Now            func() time.Time
}

// Server serves the previews of one bridge.
type Server struct {
	backend        Sandboxes
	agentFor       func(ctx context.Context, ns, name string) (sandpodv1.AgentServiceClient, context.Context, agentconn.Endpoint, func(), error)
	agentError     func(name string, err error) error
	beforeDeadline func(ctx context.Context) (context.Context, context.CancelFunc)
	now            func() time.Time
	previews       *previews
}

// NewServer is the previews of h's sandboxes, off until EnablePreviews.
func NewServer(h Host) *Server {
	return &Server{backend: h.Backend, agentFor: h.AgentFor, agentError: h.AgentError,
		beforeDeadline: h.BeforeDeadline, now: h.Now, previews: newPreviews()}
}

// Suspending notes a suspend (true) or a resume or delete (false): no new
// exposure while a sandbox is being suspended.
func (s *Server) Suspending(ns, name string, on bool) { s.previews.suspending(ns, name, on) }

// CloseSandbox forgets every exposure of a sandbox and cuts its open
// connections: called when it is suspended, deleted or found gone.
func (s *Server) CloseSandbox(ns, name string) { s.previews.closeSandbox(ns, name) }
