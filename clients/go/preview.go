package sandpod

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// PortProtocol is how a preview carries an exposed port.
type PortProtocol string

const (
	// ProtocolHTTP: HTTP/1.1 reverse proxied, with streaming and WebSockets.
	ProtocolHTTP PortProtocol = "http"
	// ProtocolTCP: raw bytes after an HTTP upgrade ("Upgrade: tcp").
	ProtocolTCP PortProtocol = "tcp"
)

// ExposedPort is a port of a sandbox served at a preview URL.
type ExposedPort struct {
	Sandbox, Namespace string
	Port               int
	Protocol           PortProtocol
	// URL needs the client's token (Authorization: Bearer) when the server
	// has tokens.
	URL string
	// SignedURL lets anyone who holds it in until ExpiresAt (a browser);
	// empty from ExposedPorts.
	SignedURL string
	ExpiresAt time.Time
}

// ExposeOption configures ExposePort.
type ExposeOption func(*pb.ExposePortRequest)

// WithProtocol sets the protocol (default ProtocolHTTP).
func WithProtocol(p PortProtocol) ExposeOption {
	return func(r *pb.ExposePortRequest) {
		r.Protocol = pb.PortProtocol_PORT_PROTOCOL_HTTP
		if p == ProtocolTCP {
			r.Protocol = pb.PortProtocol_PORT_PROTOCOL_TCP
		}
	}
}

// WithSignedURLTTL sets how long the signed URL lasts (default 1 hour).
func WithSignedURLTTL(d time.Duration) ExposeOption {
	return func(r *pb.ExposePortRequest) { r.SignedUrlTtl = durationToProto(d) }
}

// ExposePort serves port of the sandbox at a preview URL once something
// answers on it (the call waits, until ctx's deadline, for a server that
// is still starting). ErrAlreadyExists when the port is exposed already;
// ports close when the sandbox is suspended or deleted.
func (s *Sandbox) ExposePort(ctx context.Context, port int, opts ...ExposeOption) (*ExposedPort, error) {
	req := &pb.ExposePortRequest{Sandbox: s.name, Namespace: s.ns, Port: int32(port)}
	for _, o := range opts {
		o(req)
	}
	var out *ExposedPort
	err := s.c.retry(ctx, "expose", func(ctx context.Context, _ int) error {
		r, err := s.c.rpc.ExposePort(ctx, req)
		if err == nil {
			out = exposedFromProto(r.GetExposed())
		}
		return err
	})
	return out, s.observe(ctx, err)
}

// UnexposePort closes the preview of port; its URLs stop working.
func (s *Sandbox) UnexposePort(ctx context.Context, port int) error {
	return s.c.retry(ctx, "unexpose", func(ctx context.Context, _ int) error {
		_, err := s.c.rpc.UnexposePort(ctx, &pb.UnexposePortRequest{Sandbox: s.name, Namespace: s.ns, Port: int32(port)})
		return err
	})
}

// ExposedPorts lists the sandbox's exposed ports (URLs unsigned).
func (s *Sandbox) ExposedPorts(ctx context.Context) ([]ExposedPort, error) {
	var out []ExposedPort
	err := s.c.retry(ctx, "list exposed ports", func(ctx context.Context, _ int) error {
		r, err := s.c.rpc.ListExposedPorts(ctx, &pb.ListExposedPortsRequest{Sandbox: s.name, Namespace: s.ns})
		out = out[:0]
		for _, p := range r.GetPorts() {
			out = append(out, *exposedFromProto(p))
		}
		return err
	})
	return out, err
}

func exposedFromProto(p *pb.ExposedPort) *ExposedPort {
	proto := ProtocolHTTP
	if p.GetProtocol() == pb.PortProtocol_PORT_PROTOCOL_TCP {
		proto = ProtocolTCP
	}
	return &ExposedPort{
		Sandbox: p.GetSandbox(), Namespace: p.GetNamespace(), Port: int(p.GetPort()), Protocol: proto,
		URL: p.GetUrl(), SignedURL: p.GetSignedUrl(), ExpiresAt: timeFromProto(p.GetExpireTime()),
	}
}

// PreviewTransport is an http.Transport that resolves localhost and
// *.localhost to the loopback address, as browsers and curl do and Go's
// resolver does not, so a local preview URL
// (http://p8080-<id>.preview.localhost:50053/) works from Go.
func PreviewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	var d net.Dialer
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return t
}
