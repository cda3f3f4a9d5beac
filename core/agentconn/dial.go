package agentconn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Conns keeps one gRPC connection per agent, reused by every call. A
// connection belongs to one sandbox at one address: with TLS its
// credentials pin that sandbox's certificate, so a pod IP that another
// sandbox reuses gets a connection of its own.
type Conns struct {
	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn // ns/name@target -> conn
	target map[string]string           // ns/name -> its conn's key
}

// NewConns has no connection yet.
func NewConns() *Conns {
	return &Conns{conns: map[string]*grpc.ClientConn{}, target: map[string]string{}}
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

// Client returns an agent client for ep and a context carrying its secret.
func (a *Conns) Client(ctx context.Context, ns, name string, ep Endpoint) (sandpodv1.AgentServiceClient, context.Context, error) {
	conn, err := a.conn(ns, name, ep)
	if err != nil {
		return nil, nil, err
	}
	awaitReady(ctx, conn, readyWait)
	return sandpodv1.NewAgentServiceClient(conn), metadata.AppendToOutgoingContext(ctx, SecretMetadataKey, ep.Secret), nil
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

func (a *Conns) conn(ns, name string, ep Endpoint) (*grpc.ClientConn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := nsKey(ns, name)
	connKey := key + "@" + ep.Target
	if ep.TLS != nil {
		// The config is made once per sandbox incarnation (the backend caches
		// it by UID), so its address tells a recreated sandbox of the same
		// name, with a new certificate, from the old one.
		connKey += fmt.Sprintf("#%p", ep.TLS)
	}
	if old, ok := a.target[key]; ok && old != connKey {
		a.closeLocked(old)
	}
	conn, ok := a.conns[connKey]
	if !ok {
		creds := insecure.NewCredentials()
		if ep.TLS != nil {
			creds = credentials.NewTLS(ep.TLS)
		}
		var err error
		conn, err = grpc.NewClient(ep.Target,
			grpc.WithTransportCredentials(creds),
			grpc.WithConnectParams(agentBackoff),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(8<<20)))
		if err != nil {
			return nil, err
		}
		a.conns[connKey] = conn
	}
	a.target[key] = connKey
	return conn, nil
}

// Forget closes the connection of a deleted sandbox.
func (a *Conns) Forget(ns, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := nsKey(ns, name)
	if t, ok := a.target[key]; ok {
		a.closeLocked(t)
		delete(a.target, key)
	}
}

func (a *Conns) closeLocked(connKey string) {
	if c, ok := a.conns[connKey]; ok {
		_ = c.Close()
		delete(a.conns, connKey)
	}
}

func (a *Conns) CloseAll() {
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
