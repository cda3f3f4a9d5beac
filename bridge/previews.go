package bridge

import (
	"context"
	"net/http"
	"time"

	"github.com/sandpod/sandpod/bridge/preview"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The port previews live in bridge/preview; these are their RPCs and
// listener on the bridge's server, and the names its callers know.

// PreviewOptions turn previews on (preview.Options).
type PreviewOptions = preview.Options

// ExposureStore is a backend that keeps the exposed ports itself.
type ExposureStore = preview.ExposureStore

// SigParam is the query parameter of a signed preview URL.
const SigParam = preview.SigParam

func newPreviews(s *Server) *preview.Server {
	return preview.NewServer(preview.Host{Backend: s.backend, AgentFor: s.agentFor, AgentError: agentError,
		BeforeDeadline: beforeDeadline, Now: func() time.Time { return s.now() }})
}

// EnablePreviews turns on ExposePort; serve the handler of PreviewHandler
// on a listener of its own.
func (s *Server) EnablePreviews(o PreviewOptions) error { return s.previews.EnablePreviews(o) }

// PreviewHandler serves the previews with the API's authenticators.
func (s *Server) PreviewHandler(o Options) http.Handler {
	authns := make([]preview.Authenticate, 0, len(o.Authenticators))
	for _, au := range o.Authenticators {
		authns = append(authns, func(ctx context.Context, token string) (bool, func(context.Context, string) error, error) {
			c, err := au.Authenticate(ctx, token)
			if err != nil || c == nil {
				return false, nil, err
			}
			return true, c.Allow, nil
		})
	}
	return s.previews.PreviewHandler(authns)
}

// ExposePort serves a port of a sandbox at a preview URL once it answers.
func (s *Server) ExposePort(ctx context.Context, req *sandpodv1.ExposePortRequest) (*sandpodv1.ExposePortResponse, error) {
	return s.previews.ExposePort(ctx, req)
}

// UnexposePort closes a preview; its links stop working.
func (s *Server) UnexposePort(ctx context.Context, req *sandpodv1.UnexposePortRequest) (*sandpodv1.UnexposePortResponse, error) {
	return s.previews.UnexposePort(ctx, req)
}

// ListExposedPorts lists the exposed ports of a sandbox (URLs unsigned).
func (s *Server) ListExposedPorts(ctx context.Context, req *sandpodv1.ListExposedPortsRequest) (*sandpodv1.ListExposedPortsResponse, error) {
	return s.previews.ListExposedPorts(ctx, req)
}
