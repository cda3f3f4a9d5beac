package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// sandbox returns the sandbox a call uses: the one it names, else the
// session's own, claimed on the session's first such call.
func (s *Server) sandbox(ctx context.Context, req *sdk.CallToolRequest, name string) (*sandpod.Sandbox, *session, error) {
	sess, err := s.sessions.get(req.Session)
	if err != nil {
		return nil, nil, err
	}
	if name != "" {
		return s.client.Sandbox(name), sess, nil
	}
	// Held during the claim: concurrent first calls share one sandbox.
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		return nil, nil, errSessionEnded
	}
	if sess.current != "" {
		return s.client.Sandbox(sess.current), sess, nil
	}
	sb, err := s.claim(ctx, sess, s.opts.Template, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("claiming this session's sandbox from template %q: %w", s.opts.Template, err)
	}
	sess.owned[sb.Name()] = sb
	sess.current = sb.Name()
	sess.log.Info("claimed the session's sandbox", "sandbox", sb.Name())
	return sb, sess, nil
}

// claim claims a sandbox the session will own: with the session's label
// and a lease renewed while the session lasts.
func (s *Server) claim(ctx context.Context, sess *session, template string, ttl time.Duration) (*sandpod.Sandbox, error) {
	opts := []sandpod.SandboxOption{sandpod.WithLabels(map[string]string{SessionLabel: sess.id})}
	if s.opts.Lease > 0 {
		opts = append(opts, sandpod.WithLease(s.opts.Lease), sandpod.WithRenewContext(sess.renew))
	}
	if ttl > 0 {
		opts = append(opts, sandpod.WithTTL(ttl))
	}
	return s.client.Claim(ctx, template, opts...)
}

// sandboxError says which sandbox a failed call used, and what became of
// a sandbox that is gone: a session's own is replaced by the next call
// that names none.
func sandboxError(sess *session, name string, err error) error {
	if errors.Is(err, sandpod.ErrSandboxNotFound) && sess != nil {
		sess.mu.Lock()
		mine := sess.current == name
		if mine {
			sess.current = ""
			delete(sess.owned, name)
		}
		sess.mu.Unlock()
		if mine {
			return fmt.Errorf("sandbox %s: %w; it was this session's sandbox: its files are gone, and the next call that names no sandbox gets a new one", name, err)
		}
	}
	return fmt.Errorf("sandbox %s: %w", name, err)
}

// safe turns a panic of a tool into a tool error: a bug answers one call,
// it does not end the server and every session's sandboxes.
func safe[In, Out any](log *slog.Logger, name string, h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (res *sdk.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Error("tool panicked", "tool", name, "panic", p, "stack", string(debug.Stack()))
				var zero Out
				res, out, err = nil, zero, fmt.Errorf("internal error in %s: %v (the server's log has the details)", name, p)
			}
		}()
		return h(ctx, req, in)
	}
}
