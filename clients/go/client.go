package sandpod

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync/atomic"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Client talks to a sandpod server (`sandpod serve` or the bridge on
// Kubernetes). It is safe for concurrent use; make one per server and
// share it.
type Client struct {
	rpc    pb.SandboxServiceClient
	conn   *grpc.ClientConn // nil when the caller owns the connection (New)
	cfg    *config
	ns     string
	closed *atomic.Bool
	// probe is the connection as awaitServer sees it (nil: never wait);
	// reached says it has been connected once. Shared by InNamespace.
	probe   probeConn
	reached *atomic.Bool
}

// Dial makes a client for the server at address ("host:port", or any
// gRPC target such as "unix:///run/sandpod.sock"; empty means
// $SANDPOD_ADDRESS, else DefaultAddress). Like the Python client, it takes
// the token from $SANDPOD_TOKEN and the namespace from $SANDPOD_NAMESPACE
// unless WithToken or WithNamespace is given. It does not connect: the
// first call does, and a server that is not there fails calls with
// ErrUnavailable naming the address after WithConnectTimeout (3s), not
// Dial. Once connected, a server that restarts is waited for by the
// calls' retries (RetryPolicy). ctx only guards against being called with
// a finished context.
//
// Without WithTLS or WithInsecure, loopback addresses and unix sockets
// use plaintext and other addresses TLS with the system's roots.
func Dial(ctx context.Context, address string, opts ...Option) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrapError("dial", err)
	}
	cfg := newConfig(opts)
	cfg.fromEnvironment(os.Getenv)
	if address == "" {
		address = cmp.Or(os.Getenv(EnvAddress), DefaultAddress)
	}
	useTLS := !isLocalAddress(address)
	if cfg.transport {
		useTLS = !cfg.insecure
	}
	dopts := []grpc.DialOption{
		grpc.WithKeepaliveParams(cfg.keepalive),
		grpc.WithUserAgent("sandpod-go"),
	}
	if useTLS {
		tc := cfg.tlsConfig
		if tc == nil {
			WithTLS(nil)(cfg)
			tc = cfg.tlsConfig
		}
		dopts = append(dopts, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	} else {
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	dopts = append(dopts, cfg.dialOpts...)
	conn, err := grpc.NewClient(address, dopts...)
	if err != nil {
		return nil, wrapError("dial", status.Error(codes.InvalidArgument, err.Error()))
	}
	c := newClient(conn, cfg)
	c.conn = conn
	return c, nil
}

// New makes a client over a connection the caller owns (and closes): for
// tests over bufconn, or to share one grpc.ClientConn. The options about
// transport, keepalive and dial options are ignored; WithToken still
// applies.
func New(conn grpc.ClientConnInterface, opts ...Option) *Client {
	return newClient(conn, newConfig(opts))
}

func newClient(conn grpc.ClientConnInterface, cfg *config) *Client {
	probe, _ := conn.(probeConn)
	if cfg.token != "" {
		conn = authConn{ClientConnInterface: conn, value: "Bearer " + cfg.token}
	}
	return &Client{
		rpc:     pb.NewSandboxServiceClient(conn),
		cfg:     cfg,
		ns:      cfg.namespace,
		closed:  new(atomic.Bool),
		probe:   probe,
		reached: new(atomic.Bool),
	}
}

// Close closes the connection made by Dial. Calls in flight fail; later
// calls return ErrClosed. Clients made by InNamespace share the
// connection: closing any of them closes it for all.
func (c *Client) Close() error {
	if c.closed.Swap(true) || c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// Namespace returns the namespace the client's calls use.
func (c *Client) Namespace() string { return c.ns }

// InNamespace returns a client for another namespace over the same
// connection.
func (c *Client) InNamespace(ns string) *Client {
	if ns == "" {
		ns = DefaultNamespace
	}
	cc := *c
	cc.ns = ns
	return &cc
}

// Sandbox returns a handle to an existing sandbox by name without asking
// the server (to reconnect to a sandbox across restarts of the caller).
// Its Info is empty until Refresh or another call fills it.
func (c *Client) Sandbox(name string) *Sandbox {
	return &Sandbox{c: c, name: name, ns: c.ns}
}

func (c *Client) check() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// authConn adds the bearer token to every call made over it.
type authConn struct {
	grpc.ClientConnInterface
	value string
}

func (a authConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", a.value)
	return a.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

func (a authConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", a.value)
	return a.ClientConnInterface.NewStream(ctx, desc, method, opts...)
}

// newRequestID returns a fresh idempotency key for Create and Claim.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "go-" + hex.EncodeToString(b[:])
}
