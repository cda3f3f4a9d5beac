package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// MaxDials is how many Dial connections an agent carries at once: a page
// opens a handful, a busy dev server a few dozen; the cap keeps a flood of
// preview requests from exhausting the agent's file descriptors and memory.
const MaxDials = 256

// dialChunk is the most bytes one DialResponse carries.
const dialChunk = 32 << 10

// portClosedMsg starts the message of a refusal because nothing listens;
// the bridge tells it from other failures by its code, FAILED_PRECONDITION.
const portClosedMsg = "nothing listens on port"

// dialLoopback connects to port on the sandbox's own loopback: 127.0.0.1
// first, then ::1 (a server bound only to "localhost" over IPv6). Never any
// other address, so the agent cannot be turned into a proxy to the
// sandbox's network neighbours (no SSRF through the bridge).
func dialLoopback(ctx context.Context, port int) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		return c, err
	}
	if c6, err6 := d.DialContext(ctx, "tcp", net.JoinHostPort("::1", strconv.Itoa(port))); err6 == nil {
		return c6, nil
	}
	return nil, err
}

// Dial carries one TCP connection to a port of the sandbox's loopback.
// Flow control is gRPC's: the agent reads from the socket only as fast as
// the bridge takes the stream, and writes as fast as the socket drains.
func (s *Server) Dial(stream sandpodv1.AgentService_DialServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	port := int(first.GetPort())
	if port < 1 || port > 65535 {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidPort, "port must be 1..65535, got %d", port)
	}
	if n := s.dials.Add(1); n > MaxDials {
		s.dials.Add(-1)
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonPreviewConnectionLimit, "this sandbox already carries %d preview connections (the limit)", MaxDials)
	}
	defer s.dials.Add(-1)
	ctx := stream.Context()
	conn, err := dialLoopback(ctx, port)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonPortClosed, "%s %d in the sandbox (connection refused)", portClosedMsg, port)
		}
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonPortUnreachable, "connect to port %d in the sandbox: %v", port, err)
	}
	defer conn.Close()
	go func() { <-ctx.Done(); _ = conn.Close() }() // the bridge went away: unblock both copies
	if err := stream.Send(&sandpodv1.DialResponse{Connected: true}); err != nil {
		return err
	}
	if len(first.GetData()) > 0 {
		if _, err := conn.Write(first.GetData()); err != nil {
			return nil
		}
	}
	// stream -> socket in its own goroutine; socket -> stream here. The
	// call ends when the port closes its side (or either side fails): a
	// client's half-close only half-closes the socket, so the answer to a
	// request still comes back.
	go func() {
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				return
			}
			if err != nil {
				_ = conn.Close()
				return
			}
			if len(msg.GetData()) > 0 {
				if _, err := conn.Write(msg.GetData()); err != nil {
					_ = conn.Close()
					return
				}
			}
		}
	}()
	buf := make([]byte, dialChunk)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			s.touch()
			if serr := stream.Send(&sandpodv1.DialResponse{Data: buf[:n]}); serr != nil {
				return nil
			}
		}
		if err != nil {
			return nil
		}
	}
}

// IsPortClosed reports whether err is a Dial refusal because nothing
// listens on the port (yet).
func IsPortClosed(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.FailedPrecondition
}
