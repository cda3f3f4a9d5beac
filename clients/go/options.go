package sandpod

import (
	"crypto/tls"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// DefaultNamespace is the namespace used when none is given.
const DefaultNamespace = "default"

// DefaultAddress is where `sandpod serve` listens by default, and where Dial
// connects when given no address and $SANDPOD_ADDRESS is unset.
const DefaultAddress = "127.0.0.1:50051"

// The environment variables Dial reads for what it is not given, the same
// as the Python client's.
const (
	EnvAddress   = "SANDPOD_ADDRESS"
	EnvToken     = "SANDPOD_TOKEN"
	EnvNamespace = "SANDPOD_NAMESPACE"
)

// Option configures a Client in Dial or New.
type Option func(*config)

type config struct {
	token       string
	tokenSet    bool // WithToken was given (even empty)
	tlsConfig   *tls.Config
	insecure    bool
	transport   bool // WithTLS or WithInsecure was given
	retry       RetryPolicy
	callTimeout time.Duration
	namespace   string
	nsSet       bool
	keepalive   keepalive.ClientParameters
	dialOpts    []grpc.DialOption
	// connectTimeout bounds the wait for a first connection (awaitServer).
	connectTimeout time.Duration
}

func newConfig(opts []Option) *config {
	cfg := &config{
		retry:     DefaultRetryPolicy(),
		namespace: DefaultNamespace,
		// Pings only while a call is open (an Exec or a Watch), so that a
		// dead connection is noticed during long quiet streams. Five
		// minutes is what a gRPC server allows by default
		// (keepalive.EnforcementPolicy.MinTime); a client that pings more
		// often is sent away with "too_many_pings".
		keepalive:      keepalive.ClientParameters{Time: 5 * time.Minute, Timeout: 20 * time.Second},
		connectTimeout: DefaultConnectTimeout,
	}
	for _, o := range opts {
		o(cfg)
	}
	return cfg
}

// WithToken sends "authorization: Bearer <token>" with every call, as
// `sandpod serve --token-file` requires. Without it, Dial uses
// $SANDPOD_TOKEN; WithToken("") sends no token at all.
func WithToken(token string) Option {
	return func(c *config) { c.token, c.tokenSet = token, true }
}

// WithTLS connects over TLS with the given configuration (nil means the
// system's roots). Without WithTLS or WithInsecure, Dial uses plaintext for
// loopback addresses and unix sockets and TLS with the system's roots for
// any other address.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		c.tlsConfig, c.insecure, c.transport = cfg, false, true
		if c.tlsConfig == nil {
			c.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
}

// WithInsecure connects without TLS, whatever the address.
func WithInsecure() Option {
	return func(c *config) { c.tlsConfig, c.insecure, c.transport = nil, true, true }
}

// WithRetryPolicy replaces DefaultRetryPolicy. Use NoRetry to turn retries
// off.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *config) { c.retry = p }
}

// WithCallTimeout bounds each attempt of a unary call (lifecycle calls and
// the small file calls). An attempt that runs out is retried when the
// call is safe to retry and the call's context still has time. Exec,
// Watch and the file streams are bounded only by their context. Zero (the
// default) means no per-attempt timeout.
func WithCallTimeout(d time.Duration) Option {
	return func(c *config) { c.callTimeout = d }
}

// WithNamespace sets the namespace of every call (without it, Dial uses
// $SANDPOD_NAMESPACE, else "default"). See also Client.InNamespace.
func WithNamespace(ns string) Option {
	return func(c *config) {
		if ns == "" {
			ns = DefaultNamespace
		}
		c.namespace, c.nsSet = ns, true
	}
}

// fromEnvironment fills in what Dial was not given from the environment.
func (c *config) fromEnvironment(getenv func(string) string) {
	if !c.tokenSet {
		c.token = getenv(EnvToken)
	}
	if !c.nsSet {
		if ns := getenv(EnvNamespace); ns != "" {
			c.namespace = ns
		}
	}
}

// WithKeepalive replaces the client's keepalive parameters (default: a ping
// after 5 minutes without activity while a call is open, 20s to answer).
// Ping more often only when the server's keepalive enforcement policy
// allows it.
func WithKeepalive(p keepalive.ClientParameters) Option {
	return func(c *config) { c.keepalive = p }
}

// WithDialOptions passes extra options to grpc.NewClient, after the
// client's own (so they win).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// isLocalAddress reports whether a gRPC target is a unix socket or a
// loopback host, where plaintext is the default.
func isLocalAddress(target string) bool {
	if strings.HasPrefix(target, "unix:") || strings.HasPrefix(target, "unix-abstract:") {
		return true
	}
	if i := strings.Index(target, ":///"); i >= 0 {
		target = target[i+4:]
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
