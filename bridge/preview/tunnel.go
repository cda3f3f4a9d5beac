package preview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/sandpod/sandpod/core/agent"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// errPortClosed: nothing listens on the port inside the sandbox (yet).
var errPortClosed = errors.New("connection refused")

// tunnel is a net.Conn over an agent's Dial stream: the preview proxy's
// http.Transport dials through it, so a port inside the sandbox is reached
// the same way on both engines, through the agent's own connection (TLS on
// Kubernetes) and never through a host port.
type tunnel struct {
	stream  sandpodv1.AgentService_DialClient
	cancel  context.CancelFunc
	release func()
	port    int32

	rbuf []byte
	wmu  sync.Mutex
	once sync.Once
}

// dialPort opens a tunnel to port on the loopback of a sandbox. ctx bounds
// only the opening; the tunnel lives until it is closed, the sandbox's
// previews are closed (suspend, delete) or the agent goes away.
func (s *Server) dialPort(ctx context.Context, ns, name string, port int32) (net.Conn, error) {
	tctx, cancel := context.WithCancel(context.Background())
	untrack := s.previews.track(ns, name, cancel)
	client, actx, _, release, err := s.agentFor(tctx, ns, name)
	if err != nil {
		untrack()
		cancel()
		return nil, err
	}
	done := func() { untrack(); cancel(); release() }
	stream, err := client.Dial(actx)
	if err == nil {
		err = stream.Send(&sandpodv1.DialRequest{Port: port})
	}
	if err != nil {
		done()
		return nil, s.agentError(name, err)
	}
	opened := make(chan error, 1)
	go func() {
		first, err := stream.Recv()
		if err == nil && !first.GetConnected() {
			err = fmt.Errorf("agent: the first answer of a dial was not 'connected'")
		}
		opened <- err
	}()
	select {
	case err = <-opened:
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
	if err != nil {
		done()
		if agent.IsPortClosed(err) {
			return nil, fmt.Errorf("sandbox %q port %d: %w", name, port, errPortClosed)
		}
		return nil, s.agentError(name, err)
	}
	return &tunnel{stream: stream, cancel: cancel, release: done, port: port}, nil
}

func (t *tunnel) Read(p []byte) (int, error) {
	for len(t.rbuf) == 0 {
		msg, err := t.stream.Recv()
		if errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, io.ErrUnexpectedEOF // the agent, the sandbox or the preview went away
		}
		t.rbuf = msg.GetData()
	}
	n := copy(p, t.rbuf)
	t.rbuf = t.rbuf[n:]
	return n, nil
}

// Write sends p in chunks the agent's message limit takes with room to spare.
func (t *tunnel) Write(p []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	const chunk = 64 << 10
	n := 0
	for n < len(p) {
		end := min(n+chunk, len(p))
		if err := t.stream.Send(&sandpodv1.DialRequest{Data: p[n:end]}); err != nil {
			return n, net.ErrClosed
		}
		n = end
	}
	return n, nil
}

// CloseWrite half-closes: the agent half-closes its socket to the port.
func (t *tunnel) CloseWrite() error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.stream.CloseSend()
}

func (t *tunnel) Close() error {
	t.once.Do(t.release)
	return nil
}

func (t *tunnel) LocalAddr() net.Addr  { return tunnelAddr("bridge") }
func (t *tunnel) RemoteAddr() net.Addr { return tunnelAddr(fmt.Sprintf("sandbox:%d", t.port)) }

// Deadlines are not supported: the proxy bounds its calls with contexts,
// and closing the tunnel cancels the stream.
func (t *tunnel) SetDeadline(time.Time) error      { return nil }
func (t *tunnel) SetReadDeadline(time.Time) error  { return nil }
func (t *tunnel) SetWriteDeadline(time.Time) error { return nil }

type tunnelAddr string

func (a tunnelAddr) Network() string { return "sandpod-tunnel" }
func (a tunnelAddr) String() string  { return string(a) }
