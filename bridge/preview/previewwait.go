package preview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Before a preview URL is handed out the port must answer: a URL that
// gives "connection refused" to the first browser that opens it is worse
// than a call that waits a moment for a dev server or Jupyter to start.

const (
	portWaitMin = 50 * time.Millisecond
	portWaitMax = time.Second
)

// portCheckRetry is the CheckRetry of the wait: any HTTP status is an
// answer (a 404 or a 500 still means the server listens); "connection
// refused" means not yet; any other failure ends the wait; so does the
// caller's deadline.
func portCheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err == nil && resp != nil {
		return false, nil
	}
	if errors.Is(err, errPortClosed) {
		return true, nil
	}
	return false, err
}

// waitPort waits until port answers inside the sandbox: an HTTP request
// for http, a connection for tcp, through the agent's tunnel.
func (s *Server) waitPort(ctx context.Context, ns, name string, port int32, proto sandpodv1.PortProtocol) error {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return s.dialPort(ctx, ns, name, port) }
	var err error
	if proto == sandpodv1.PortProtocol_PORT_PROTOCOL_TCP {
		err = waitTCP(ctx, dial)
	} else {
		err = waitHTTP(ctx, dial, port)
	}
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok {
		return st.Err() // the agent or the sandbox: said by agentFor
	}
	if errors.Is(err, errPortClosed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errinfo.Newf(codes.DeadlineExceeded, errinfo.ReasonPortNotAnswering, "sandbox %q: nothing answered on port %d before the call's deadline; start the server first, bound to 127.0.0.1, ::1 or 0.0.0.0 (the preview reaches the sandbox's loopback), or give the call a longer deadline", name, port)
	}
	return errinfo.Newf(codes.Unavailable, errinfo.ReasonPortUnreachable, "sandbox %q: port %d: %v", name, port, err)
}

func waitHTTP(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), port int32) error {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryWaitMin, c.RetryWaitMax = portWaitMin, portWaitMax
	c.RetryMax = 1 << 20 // the caller's deadline ends the wait, not a count
	c.CheckRetry = portCheckRetry
	c.Backoff = retryablehttp.DefaultBackoff
	// The last error as it is (the default wraps it in "giving up after
	// N attempts", which hides errPortClosed from errors.Is).
	c.ErrorHandler = func(resp *http.Response, err error, _ int) (*http.Response, error) {
		if resp != nil {
			_ = resp.Body.Close()
		}
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	c.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "sandpod-preview-check")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.Body.Close()
}

func waitTCP(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) error {
	for attempt := 0; ; attempt++ {
		conn, err := dial(ctx, "tcp", "")
		if err == nil {
			return conn.Close()
		}
		if !errors.Is(err, errPortClosed) {
			return err
		}
		wait := retryablehttp.DefaultBackoff(portWaitMin, portWaitMax, attempt, nil)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
