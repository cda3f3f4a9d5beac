package bridge

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/core/agent"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// agentConns keeps one gRPC connection per agent, reused by every call.
type agentConns struct {
	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn // target -> conn
	target map[string]string           // ns/name -> target
}

func newAgentConns() *agentConns {
	return &agentConns{conns: map[string]*grpc.ClientConn{}, target: map[string]string{}}
}

// agentBackoff reconnects quickly: a just-started agent refuses connections
// for a few milliseconds, and gRPC's default first retry is a second away.
var agentBackoff = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// readyWait bounds how long a call waits for an agent's connection before it
// is tried anyway (and fails UNAVAILABLE if the agent is still unreachable).
const readyWait = 3 * time.Second

// client returns an agent client for ep and a context carrying its secret.
func (a *agentConns) client(ctx context.Context, ns, name string, ep agent.Endpoint) (sandpodv1.AgentServiceClient, context.Context, error) {
	conn, err := a.conn(ns, name, ep)
	if err != nil {
		return nil, nil, err
	}
	awaitReady(ctx, conn, readyWait)
	return sandpodv1.NewAgentServiceClient(conn), metadata.AppendToOutgoingContext(ctx, agent.SecretMetadataKey, ep.Secret), nil
}

// awaitReady gives a just-started agent a moment to listen: on Kubernetes a
// pod is ready once its container has started, a few milliseconds before
// the agent accepts connections.
func awaitReady(ctx context.Context, conn *grpc.ClientConn, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready, connectivity.Shutdown:
			return
		case connectivity.Idle:
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			return
		}
	}
}

func (a *agentConns) conn(ns, name string, ep agent.Endpoint) (*grpc.ClientConn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := nsKey(ns, name)
	if old, ok := a.target[key]; ok && old != ep.Target {
		a.closeLocked(old)
	}
	conn, ok := a.conns[ep.Target]
	if !ok {
		var err error
		conn, err = grpc.NewClient(ep.Target,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(agentBackoff),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(8<<20)))
		if err != nil {
			return nil, err
		}
		a.conns[ep.Target] = conn
	}
	a.target[key] = ep.Target
	return conn, nil
}

// forget closes the connection of a deleted sandbox.
func (a *agentConns) forget(ns, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := nsKey(ns, name)
	if t, ok := a.target[key]; ok {
		a.closeLocked(t)
		delete(a.target, key)
	}
}

func (a *agentConns) closeLocked(target string) {
	if c, ok := a.conns[target]; ok {
		_ = c.Close()
		delete(a.conns, target)
	}
}

func (a *agentConns) closeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for t := range a.conns {
		a.closeLocked(t)
	}
}

func nsKey(ns, name string) string {
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + name
}
