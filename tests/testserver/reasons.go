package testserver

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// reasonCheck watches every sandpod call made on a Server's Conn: an error
// the server sent without an ErrorInfo reason is recorded, and fails the
// test at its end. The static scan of core/api/errinfo proves that no
// status is made without a reason; this catches what it cannot see, a
// plain Go error that reaches gRPC and goes out as UNKNOWN.
type reasonCheck struct {
	mu      sync.Mutex
	missing []string
}

// fromGRPC says whether gRPC made err itself, not sandpod's server code:
// the caller's own deadline or cancel, a connection that failed (a test
// that stops the server), a message over the size limit.
func fromGRPC(ctx context.Context, err error) bool {
	st := status.Convert(err)
	msg := st.Message()
	switch {
	case strings.HasPrefix(msg, "grpc: "):
		return true
	case (st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled) && ctx.Err() != nil:
		return true
	case st.Code() == codes.Unavailable &&
		(strings.Contains(msg, "connection") || strings.Contains(msg, "transport") || strings.Contains(msg, "EOF")):
		return true
	}
	return false
}

func (r *reasonCheck) see(ctx context.Context, method string, err error) {
	if err == nil || errors.Is(err, io.EOF) || !strings.HasPrefix(method, "/sandpod.v1.") ||
		errinfo.Reason(err) != "" || fromGRPC(ctx, err) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missing = append(r.missing, method+": "+err.Error())
}

func (r *reasonCheck) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	r.see(ctx, method, err)
	return err
}

func (r *reasonCheck) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		r.see(ctx, method, err)
		return nil, err
	}
	return &checkedStream{ClientStream: s, r: r, ctx: ctx, method: method}, nil
}

type checkedStream struct {
	grpc.ClientStream
	r      *reasonCheck
	ctx    context.Context
	method string
}

func (s *checkedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	s.r.see(s.ctx, s.method, err)
	return err
}

func (r *reasonCheck) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.missing...)
}
