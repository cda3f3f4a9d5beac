package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/bridge"
)

// Path is where the streamable HTTP endpoint is served.
const Path = "/mcp"

// HTTPOptions configure ServeHTTP.
type HTTPOptions struct {
	// Authenticators check the bearer token of every request, as the
	// sandpod API does (bridge.NewTokenFile for --token-file); none lets
	// every caller in, which ServeHTTP allows on a loopback address only.
	Authenticators []bridge.Authenticator
	// Namespace is the one the tools act in: a token limited to other
	// namespaces is refused.
	Namespace string
	// SessionTimeout ends a session (and deletes its sandboxes) that has
	// sent no request for this long; zero: never.
	SessionTimeout time.Duration
	// MaxRequestBytes bounds a request body (a write_file's content).
	MaxRequestBytes int64
	// Streams bounds the requests each caller (token) has in flight: a
	// session's event stream and each tool call's answer are streams that
	// last as long as they need. nil: no bound.
	Streams *bridge.StreamLimiter
}

// DefaultSessionTimeout is how long an idle HTTP session lives.
const DefaultSessionTimeout = 30 * time.Minute

// CheckListener refuses a listener off loopback when no token is needed.
func CheckListener(lis net.Listener, o HTTPOptions) error {
	if len(o.Authenticators) == 0 && !isLoopback(lis.Addr()) {
		return fmt.Errorf("--listen %s is not a loopback address: give --token-file so that callers must present a token", lis.Addr())
	}
	return nil
}

// ServeHTTP serves the streamable HTTP transport at Path on lis until ctx
// ends, then ends every session, deleting their sandboxes.
func (s *Server) ServeHTTP(ctx context.Context, lis net.Listener, o HTTPOptions) error {
	if err := CheckListener(lis, o); err != nil {
		lis.Close()
		return err
	}
	srv := &http.Server{Handler: s.httpHandler(o), ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	s.log.Info("sandpod MCP server listening", "url", "http://"+lis.Addr().String()+Path, "tokens", len(o.Authenticators) > 0)
	var err error
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close() // the sessions' open streams
		}
		cancel()
	case err = <-errc:
	}
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// httpHandler is the MCP endpoint behind the token check.
func (s *Server) httpHandler(o HTTPOptions) http.Handler {
	if o.MaxRequestBytes == 0 {
		// A write_file of MaxWriteBytes, base64-encoded, and its envelope.
		o.MaxRequestBytes = MaxWriteBytes*4/3 + 1<<20
	}
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp },
		&sdk.StreamableHTTPOptions{SessionTimeout: o.SessionTimeout, Logger: quiet(s.log), MaxRequestBodyBytes: o.MaxRequestBytes})
	if o.Streams != nil {
		// Inside the token check: it names the caller.
		h = o.Streams.LimitHTTP(h, func(r *http.Request) string {
			if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
				return ti.UserID
			}
			return ""
		})
	}
	if len(o.Authenticators) > 0 {
		// The SDK's middleware puts the caller in the request, so that a
		// session answers only the caller that opened it.
		h = auth.RequireBearerToken(verifier(o.Authenticators, o.Namespace), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	return mux
}

// verifier checks a token with the API's authenticators, and that it may
// act in the namespace of the tools.
func verifier(authns []bridge.Authenticator, namespace string) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		for _, a := range authns {
			c, err := a.Authenticate(ctx, token)
			if err != nil {
				return nil, fmt.Errorf("checking the bearer token: %s", status.Convert(err).Message())
			}
			if c == nil {
				continue
			}
			if c.Allow != nil {
				if err := c.Allow(ctx, namespace); err != nil {
					return nil, fmt.Errorf("%w: %s (this MCP server acts in namespace %q)", auth.ErrInvalidToken, status.Convert(err).Message(), namespace)
				}
			}
			return &auth.TokenInfo{UserID: c.Name}, nil
		}
		return nil, fmt.Errorf("%w: missing or unknown bearer token (send Authorization: Bearer <a token of --token-file>)", auth.ErrInvalidToken)
	}
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
