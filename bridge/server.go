package bridge

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/bridge/check"
	"github.com/sandpod/sandpod/bridge/preview"
	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Server implements sandpodv1.SandboxServiceServer over a Backend.
type Server struct {
	sandpodv1.UnimplementedSandboxServiceServer

	backend  Backend
	agents   *agentconn.Conns
	previews *preview.Server
	now      func() time.Time
}

// New returns a bridge over backend.
func New(backend Backend) *Server {
	s := &Server{backend: backend, agents: agentconn.NewConns(), now: time.Now}
	s.previews = newPreviews(s)
	return s
}

// Close drops the connections to agents.
func (s *Server) Close() { s.agents.CloseAll() }

// Options configure the gRPC server of the bridge.
type Options struct {
	// Authenticators, when not empty, decide who may call: a caller must
	// present a bearer token one of them knows.
	Authenticators []Authenticator
	// ServerOptions are passed to grpc.NewServer (e.g. TLS credentials).
	ServerOptions []grpc.ServerOption
	// Streams counts and limits the streams each caller holds open; share
	// one between the network and in-process servers (nil: no limit).
	Streams *StreamLimiter
	// StreamsPerConn is gRPC's MaxConcurrentStreams (0: gRPC's default,
	// none); InProcess leaves it out, its one connection carries every
	// caller of the HTTP front doors.
	StreamsPerConn uint32
	// ConnsPerListener caps the connections each listener of the server's
	// doors holds (LimitListener; 0: no cap).
	ConnsPerListener int
}

// GRPCServer builds a gRPC server with the sandbox service, the standard
// health service (SERVING) and reflection with the .proto comments, so
// grpcurl works against it and `grpcurl describe` documents it.
func (s *Server) GRPCServer(o Options) (*grpc.Server, *health.Server) {
	auth := &auth{authenticators: o.Authenticators}
	opts := append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(auth.unary),
		grpc.ChainStreamInterceptor(auth.stream, o.Streams.stream),
		grpc.MaxRecvMsgSize(8 << 20),
	}, transportOptions(o.StreamsPerConn)...)
	opts = append(opts, o.ServerOptions...)
	g := grpc.NewServer(opts...)
	sandpodv1.RegisterSandboxServiceServer(g, s)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(sandpodv1.SandboxService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	registerReflection(g)
	return g, hs
}

// CreateSandbox validates and creates a sandbox cold.
func (s *Server) CreateSandbox(ctx context.Context, req *sandpodv1.CreateSandboxRequest) (resp *sandpodv1.CreateSandboxResponse, err error) {
	defer func(start time.Time) { observeClaim("CreateSandbox", start, resp.GetSandbox(), false, err) }(time.Now())
	if err := firstError(
		checkName("template", req.GetTemplate(), req.GetSnapshot() == ""),
		checkName("snapshot", req.GetSnapshot(), false),
		checkNamespace(req.GetNamespace()),
		checkName("name", req.GetName(), false),
		checkLabels("labels", req.GetLabels()),
		checkEnv("env", req.GetEnv()),
		checkLifetime(req.GetTtl(), req.GetShutdownTime(), s.now()),
		checkPolicy(req.GetShutdownPolicy()),
		checkRequestID(req.GetRequestId()),
		checkLease(req.GetLease()),
	); err != nil {
		return nil, err
	}
	sb, err := s.backend.CreateSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.CreateSandboxResponse{Sandbox: sb}, nil
}

// ClaimSandbox validates and claims a sandbox, warm first.
func (s *Server) ClaimSandbox(ctx context.Context, req *sandpodv1.ClaimSandboxRequest) (resp *sandpodv1.ClaimSandboxResponse, err error) {
	defer func(start time.Time) { observeClaim("ClaimSandbox", start, resp.GetSandbox(), resp.GetWarm(), err) }(time.Now())
	if err := firstError(
		checkName("template", req.GetTemplate(), req.GetSnapshot() == ""),
		checkName("snapshot", req.GetSnapshot(), false),
		checkNamespace(req.GetNamespace()),
		checkLabels("labels", req.GetLabels()),
		checkEnv("env", req.GetEnv()),
		checkLifetime(req.GetTtl(), req.GetShutdownTime(), s.now()),
		checkPolicy(req.GetShutdownPolicy()),
		checkRequestID(req.GetRequestId()),
		checkLease(req.GetLease()),
	); err != nil {
		return nil, err
	}
	sb, warm, err := s.backend.ClaimSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ClaimSandboxResponse{Sandbox: sb, Warm: warm}, nil
}

// GetSandbox returns one sandbox.
func (s *Server) GetSandbox(ctx context.Context, req *sandpodv1.GetSandboxRequest) (*sandpodv1.GetSandboxResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	sb, err := s.backend.GetSandbox(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	return &sandpodv1.GetSandboxResponse{Sandbox: sb}, nil
}

// ListSandboxes returns one page of matching sandboxes.
func (s *Server) ListSandboxes(ctx context.Context, req *sandpodv1.ListSandboxesRequest) (*sandpodv1.ListSandboxesResponse, error) {
	if err := checkNamespace(req.GetNamespace()); err != nil {
		return nil, err
	}
	sel, err := parseSelector(req.GetLabelSelector())
	if err != nil {
		return nil, err
	}
	pg, err := newPage("ListSandboxes", req.GetNamespace(), req.GetPageSize(), req.GetPageToken(), sel.String(), strconv.FormatBool(req.GetIncludePoolMembers()))
	if err != nil {
		return nil, err
	}
	all, err := s.backend.ListSandboxes(ctx, req.GetNamespace(), sel, req.GetIncludePoolMembers())
	if err != nil {
		return nil, err
	}
	items, next, err := pageOf(pg, all, (*sandpodv1.Sandbox).GetName)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ListSandboxesResponse{Sandboxes: items, NextPageToken: next}, nil
}

// WatchSandboxes streams changes until the caller cancels.
func (s *Server) WatchSandboxes(req *sandpodv1.WatchSandboxesRequest, stream sandpodv1.SandboxService_WatchSandboxesServer) error {
	if err := checkNamespace(req.GetNamespace()); err != nil {
		return err
	}
	sel, err := parseSelector(req.GetLabelSelector())
	if err != nil {
		return err
	}
	events, err := s.backend.WatchSandboxes(stream.Context(), req.GetNamespace(), sel, req.GetIncludePoolMembers(), req.GetSendInitialEvents())
	if err != nil {
		return err
	}
	// Headers go out once the watch is live: a caller that waits for them
	// (the stream's Header()) misses no change made after that.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for ev := range events {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	if stream.Context().Err() != nil {
		return nil
	}
	return errinfo.Newf(codes.Aborted, errinfo.ReasonWatchFellBehind, "watch fell behind; list and watch again")
}

// SuspendSandbox stops a sandbox's processes and keeps its files.
func (s *Server) SuspendSandbox(ctx context.Context, req *sandpodv1.SuspendSandboxRequest) (*sandpodv1.SuspendSandboxResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	sb, err := s.backend.SuspendSandbox(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	s.previews.Suspending(req.GetNamespace(), req.GetName(), true)
	s.previews.CloseSandbox(req.GetNamespace(), req.GetName())
	return &sandpodv1.SuspendSandboxResponse{Sandbox: sb}, nil
}

// ResumeSandbox starts a suspended sandbox again, or thaws a paused one.
func (s *Server) ResumeSandbox(ctx context.Context, req *sandpodv1.ResumeSandboxRequest) (*sandpodv1.ResumeSandboxResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	sb, err := s.backend.ResumeSandbox(ctx, req.GetNamespace(), req.GetName(), !req.GetNoWait())
	if err != nil {
		return nil, err
	}
	s.previews.Suspending(req.GetNamespace(), req.GetName(), false)
	return &sandpodv1.ResumeSandboxResponse{Sandbox: sb}, nil
}

// PauseSandbox freezes a sandbox's processes with their memory;
// ResumeSandbox thaws them.
func (s *Server) PauseSandbox(ctx context.Context, req *sandpodv1.PauseSandboxRequest) (*sandpodv1.PauseSandboxResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	sb, err := s.backend.PauseSandbox(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	return &sandpodv1.PauseSandboxResponse{Sandbox: sb}, nil
}

// ExtendSandbox moves the shutdown time.
func (s *Server) ExtendSandbox(ctx context.Context, req *sandpodv1.ExtendSandboxRequest) (*sandpodv1.ExtendSandboxResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	now := s.now()
	if req.GetTtl() == nil && req.GetShutdownTime() == nil {
		return nil, invalid(errinfo.ReasonInvalidLifetime, "ttl", "give ttl or shutdown_time")
	}
	if err := checkLifetime(req.GetTtl(), req.GetShutdownTime(), now); err != nil {
		return nil, err
	}
	at := now.Add(req.GetTtl().AsDuration())
	if req.GetShutdownTime() != nil {
		at = req.GetShutdownTime().AsTime()
	}
	sb, err := s.backend.ExtendSandbox(ctx, req.GetNamespace(), req.GetName(), at)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ExtendSandboxResponse{Sandbox: sb}, nil
}

// DeleteSandbox deletes a sandbox and its files.
func (s *Server) DeleteSandbox(ctx context.Context, req *sandpodv1.DeleteSandboxRequest) (*sandpodv1.DeleteSandboxResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	if err := s.backend.DeleteSandbox(ctx, req.GetNamespace(), req.GetName()); err != nil {
		return nil, err
	}
	s.agents.Forget(req.GetNamespace(), req.GetName())
	s.previews.Suspending(req.GetNamespace(), req.GetName(), false)
	s.previews.CloseSandbox(req.GetNamespace(), req.GetName())
	return &sandpodv1.DeleteSandboxResponse{}, nil
}

// listPage checks a namespace and page size, lists, and returns one page.
func listPage[T any](ctx context.Context, method, namespace string, size int32, token string,
	list func(context.Context, string) ([]T, error), nameOf func(T) string) ([]T, string, error) {
	if err := checkNamespace(namespace); err != nil {
		return nil, "", err
	}
	pg, err := newPage(method, namespace, size, token)
	if err != nil {
		return nil, "", err
	}
	all, err := list(ctx, namespace)
	if err != nil {
		return nil, "", err
	}
	return pageOf(pg, all, nameOf)
}

// ListTemplates lists templates.
func (s *Server) ListTemplates(ctx context.Context, req *sandpodv1.ListTemplatesRequest) (*sandpodv1.ListTemplatesResponse, error) {
	items, next, err := listPage(ctx, "ListTemplates", req.GetNamespace(), req.GetPageSize(), req.GetPageToken(), s.backend.ListTemplates, (*sandpodv1.Template).GetName)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ListTemplatesResponse{Templates: items, NextPageToken: next}, nil
}

// ListWarmPools lists warm pools.
func (s *Server) ListWarmPools(ctx context.Context, req *sandpodv1.ListWarmPoolsRequest) (*sandpodv1.ListWarmPoolsResponse, error) {
	items, next, err := listPage(ctx, "ListWarmPools", req.GetNamespace(), req.GetPageSize(), req.GetPageToken(), s.backend.ListWarmPools, (*sandpodv1.WarmPool).GetName)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ListWarmPoolsResponse{WarmPools: items, NextPageToken: next}, nil
}

// GetWarmPool returns one pool.
func (s *Server) GetWarmPool(ctx context.Context, req *sandpodv1.GetWarmPoolRequest) (*sandpodv1.GetWarmPoolResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	p, err := s.backend.GetWarmPool(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	return &sandpodv1.GetWarmPoolResponse{WarmPool: p}, nil
}

// ScaleWarmPool sets a pool's size.
func (s *Server) ScaleWarmPool(ctx context.Context, req *sandpodv1.ScaleWarmPoolRequest) (*sandpodv1.ScaleWarmPoolResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	if req.GetReplicas() < 0 || req.GetReplicas() > MaxReplicas {
		return nil, invalid(errinfo.ReasonInvalidValue, "replicas", "must be between 0 and %d, got %d", MaxReplicas, req.GetReplicas())
	}
	p, err := s.backend.ScaleWarmPool(ctx, req.GetNamespace(), req.GetName(), req.GetReplicas())
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ScaleWarmPoolResponse{WarmPool: p}, nil
}

func checkRef(name, namespace string) error {
	return firstError(checkName("name", name, true), checkNamespace(namespace))
}

func checkPolicy(p sandpodv1.ShutdownPolicy) error {
	if _, ok := sandpodv1.ShutdownPolicy_name[int32(p)]; !ok {
		return invalid(errinfo.ReasonInvalidLifetime, "shutdown_policy", "unknown value %d", p)
	}
	return nil
}

func firstError(errs ...error) error { return check.First(errs...) }
