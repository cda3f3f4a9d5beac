// Package agent is the in-sandbox server: exec with streaming I/O and files
// confined to the sandbox's root. It is the same program and protocol in the
// local engine and in a Kubernetes pod. Every call must carry the sandbox's
// secret; the bridge is the only caller that knows it.
package agent

import (
	"context"
	"crypto/subtle"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Version is set at build time.
var Version = "dev"

// Config configures an agent.
type Config struct {
	// Sandbox is the name of the sandbox this agent serves.
	Sandbox string
	// Root is the workspace: the directory relative paths start from and
	// commands start in ($HOME too, in a local sandbox).
	Root string
	// RunAs, when set, is the user and group commands run as (the local
	// engine's agent runs as root inside its sandbox; commands do not).
	RunAs *syscall.Credential
	// Secret must be presented by every caller (the local engine, and pods
	// made before ClientCertAuth).
	Secret string
	// ClientCertAuth: callers are authenticated by the TLS handshake (a
	// client certificate of the bridge CA: core/agentconn), and there is no
	// secret. Every call must then come over such a handshake.
	ClientCertAuth bool
	// Env is the base environment of every command.
	Env []string
}

// Server implements sandpodv1.AgentServiceServer.
type Server struct {
	sandpodv1.UnimplementedAgentServiceServer

	cfg          Config
	root         sandboxFS
	start        time.Time
	lastActivity atomic.Int64 // unix nanos
	running      atomic.Int32
	// watchStreams and watchDirs count what WatchFiles holds (see its limits).
	watchStreams atomic.Int32
	watchDirs    atomic.Int64
	dials        atomic.Int32 // open Dial connections
	code         codeContexts
	// paused is set while SetPaused has the sandbox's processes stopped:
	// exec and file calls are refused then. pauseMu orders SetPaused calls.
	paused  atomic.Bool
	pauseMu sync.Mutex
	trim    *idleTrim
}

// New opens the sandbox root and returns a server for it.
func New(cfg Config) (*Server, error) {
	if cfg.Secret == "" && !cfg.ClientCertAuth {
		return nil, fmt.Errorf("agent: an empty secret would let anyone in")
	}
	if fi, err := os.Stat(cfg.Root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("agent: workspace %s is not a directory (%v)", cfg.Root, err)
	}
	s := &Server{cfg: cfg, root: sandboxFS{owner: cfg.RunAs}, start: time.Now(), trim: newIdleTrim(trimDelay, debug.FreeOSMemory)}
	s.touch()
	return s, nil
}

// Close kills the code contexts.
func (s *Server) Close() error {
	s.code.killAll()
	return nil
}

// GRPCServer returns a gRPC server with the agent service and secret check,
// and the standard health service, which needs no secret (it tells nothing
// but "this process answers"): a kubelet's gRPC liveness probe calls it, so
// a hung agent is restarted.
func (s *Server) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append(opts,
		grpc.ChainUnaryInterceptor(s.authUnary),
		grpc.ChainStreamInterceptor(s.authStream),
		grpc.MaxRecvMsgSize(8<<20),
	)
	g := grpc.NewServer(opts...)
	sandpodv1.RegisterAgentServiceServer(g, s)
	healthpb.RegisterHealthServer(g, health.NewServer())
	return g
}

// healthPrefix is the method prefix of the standard health service.
const healthPrefix = "/grpc.health.v1.Health/"

func (s *Server) touch() { s.lastActivity.Store(time.Now().UnixNano()) }

func (s *Server) authorize(ctx context.Context) error {
	if s.cfg.ClientCertAuth {
		// The handshake checked the certificate (agentconn.VerifyClient);
		// this only makes sure the call came over one, should a listener
		// ever be served without the TLS config.
		if p, ok := peer.FromContext(ctx); ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && ti.State.HandshakeComplete && len(ti.State.PeerCertificates) > 0 {
				return nil
			}
		}
		return errinfo.Newf(codes.Unauthenticated, errinfo.ReasonAgentSecretMismatch, "agent: calls need the bridge's client certificate")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, got := range md.Get(agentconn.SecretMetadataKey) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Secret)) == 1 {
			return nil
		}
	}
	return errinfo.Newf(codes.Unauthenticated, errinfo.ReasonAgentSecretMismatch, "agent: missing or wrong sandbox secret")
}

func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, healthPrefix) {
		return h(ctx, req) // not activity either: probes must not keep a sandbox awake
	}
	if err := s.authorize(ctx); err != nil {
		return nil, err
	}
	if err := s.refusePaused(info.FullMethod); err != nil {
		return nil, err
	}
	s.touch()
	if !strings.HasSuffix(info.FullMethod, "/GetAgentInfo") { // the engine's health check
		s.trim.begin()
		defer s.trim.end()
	}
	return h(ctx, req)
}

// refusePaused refuses exec and file calls while the sandbox is paused;
// pause, resume and the health check (GetAgentInfo) still answer.
func (s *Server) refusePaused(method string) error {
	if !s.paused.Load() || strings.HasSuffix(method, "/SetPaused") || strings.HasSuffix(method, "/GetAgentInfo") {
		return nil
	}
	return errinfo.New(codes.FailedPrecondition, errinfo.ReasonSandboxPaused, map[string]string{"sandbox": s.cfg.Sandbox},
		fmt.Sprintf("sandbox %q is paused: resume it first", s.cfg.Sandbox))
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if strings.HasPrefix(info.FullMethod, healthPrefix) {
		return h(srv, ss)
	}
	if err := s.authorize(ss.Context()); err != nil {
		return err
	}
	if err := s.refusePaused(info.FullMethod); err != nil {
		return err
	}
	s.touch()
	s.trim.begin()
	defer s.trim.end()
	return h(srv, ss)
}

// GetAgentInfo reports identity and activity; the engine uses it as a health check.
func (s *Server) GetAgentInfo(context.Context, *sandpodv1.GetAgentInfoRequest) (*sandpodv1.GetAgentInfoResponse, error) {
	return &sandpodv1.GetAgentInfoResponse{
		Sandbox:          s.cfg.Sandbox,
		Version:          Version,
		Root:             s.cfg.Root,
		StartTime:        timestamppb.New(s.start),
		LastActivityTime: timestamppb.New(time.Unix(0, s.lastActivity.Load())),
		RunningExecs:     s.running.Load(),
	}, nil
}
