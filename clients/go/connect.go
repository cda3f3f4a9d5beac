package sandpod

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// DefaultConnectTimeout is how long a call of a client that has never
// reached its server waits for a first connection; see WithConnectTimeout.
const DefaultConnectTimeout = 3 * time.Second

// WithConnectTimeout sets how long, until the client has reached its server
// once, a call waits for a connection before it fails with ErrUnavailable
// naming the address ("no sandpod server at 127.0.0.1:50051: is `make run`
// running? ..."): a server that is not running, or a wrong address, fails
// in seconds rather than after the RetryPolicy's whole budget. Once the
// connection has been made, calls ride out a server restart with their
// retries, as before. Zero or less turns the wait off: a first call then
// retries like any other. The default is DefaultConnectTimeout.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) { c.connectTimeout = d }
}

// probeConn is what awaitServer needs of a connection: *grpc.ClientConn
// has it (a connection given to New that lacks it is never waited for).
type probeConn interface {
	grpc.ClientConnInterface
	Connect()
	GetState() connectivity.State
	WaitForStateChange(context.Context, connectivity.State) bool
	Target() string
}

// awaitServer lets a call go on once the client has reached its server.
// Before that, it waits at most the connect timeout (and ctx) for the
// connection and then fails with ErrUnavailable naming the address. The
// rule keys on the connection, not on errors: an UNAVAILABLE the server
// itself sends (a sandbox that failed to start) comes over a connection
// that was made, and is retried as always.
func (c *Client) awaitServer(ctx context.Context, op string) error {
	p := c.probe
	if p == nil || c.reached.Load() || c.cfg.connectTimeout <= 0 {
		return nil
	}
	wait := c.cfg.connectTimeout
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	p.Connect()
	for s := p.GetState(); s != connectivity.Ready; s = p.GetState() {
		if s == connectivity.Shutdown {
			return nil // closed: the call itself says so
		}
		if p.WaitForStateChange(wctx, s) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return wrapError(op, err)
		}
		cause, answered := whyUnreachable(ctx, p)
		if answered {
			break
		}
		return wrapError(op, status.Error(codes.Unavailable, fmt.Sprintf(
			"no sandpod server at %s: is `make run` running? (no connection within %s: %s)", p.Target(), wait, cause)))
	}
	c.reached.Store(true)
	return nil
}

// whyUnreachable asks gRPC why the server cannot be reached (refused, no
// such host, a TLS handshake that failed) with one health check that does
// not wait for a connection; answered is true if the server answered it
// after all (health needs no token).
func whyUnreachable(ctx context.Context, conn grpc.ClientConnInterface) (cause string, answered bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return status.Convert(err).Message(), false
	}
	return "", true
}
