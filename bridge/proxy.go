package bridge

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sandpod/sandpod/core/agent"
	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Exec and file calls are checked here, then forwarded to the sandbox's
// agent message by message: the path and protocol are the same whatever the
// backend.

// agentFor resolves the agent of a sandbox; release must be called when the
// call ends.
func (s *Server) agentFor(ctx context.Context, ns, name string) (sandpodv1.AgentServiceClient, context.Context, agentconn.Endpoint, func(), error) {
	if err := firstError(checkName("sandbox", name, true), checkNamespace(ns)); err != nil {
		return nil, nil, agentconn.Endpoint{}, nil, err
	}
	ctx, cancel := beforeDeadline(ctx)
	ep, err := s.backend.Agent(ctx, ns, name)
	if err != nil {
		cancel()
		return nil, nil, agentconn.Endpoint{}, nil, err
	}
	release := func() {
		cancel()
		if ep.Done != nil {
			ep.Done()
		}
	}
	client, actx, err := s.agents.Client(ctx, ns, name, ep)
	if err != nil {
		release()
		return nil, nil, agentconn.Endpoint{}, nil, errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentUnreachable, "sandbox %q: connect to agent: %v", name, err)
	}
	return client, actx, ep, release, nil
}

// beforeDeadline ends the call to the agent a little before the caller's
// deadline (a quarter of the time left, at most a second), so that an agent
// that does not answer (hung, stopped) gets the caller a status that names
// the sandbox rather than the caller's own bare "deadline exceeded".
func beforeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(time.Until(dl)/4, time.Second)
	if margin <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-margin))
}

// agentError keeps the agent's status, and explains a lost connection or an
// agent that did not answer in time.
func agentError(name string, err error) error { return agentErrorAfter(name, err, false) }

// agentErrorAfter is agentError for a stream that may already have had
// answers from the agent (then a deadline is the command's time, not a
// silent agent).
func agentErrorAfter(name string, err error, answered bool) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentUnreachable, "sandbox %q: %v", name, err)
	}
	switch {
	case st.Code() == codes.Unavailable && strings.Contains(st.Message(), agentconn.NotAuthenticated):
		// The TLS handshake refused what answered at the agent's address
		// (agentconn.AgentCheck): nothing of the call was sent there.
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentNotAuthenticated, "sandbox %q: the bridge refused what answered at its agent's address (%s); the call was not sent", name, st.Message())
	case st.Code() == codes.Unavailable:
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentUnreachable, "sandbox %q: its agent is unreachable (%s); the call was not retried", name, st.Message())
	case st.Code() == codes.DeadlineExceeded && answered:
		return errinfo.Newf(codes.DeadlineExceeded, errinfo.ReasonCallDeadlineExceeded, "sandbox %q: the call's deadline passed before the agent finished", name)
	case st.Code() == codes.DeadlineExceeded:
		return errinfo.Newf(codes.DeadlineExceeded, errinfo.ReasonAgentNotAnswering, "sandbox %q: its agent is not answering (no reply before the call's deadline); it may be hung, and is restarted if it stays so", name)
	}
	return err
}

func checkExecStart(st *sandpodv1.ExecStart) error {
	for i, a := range st.GetArgv() {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid(errinfo.ReasonInvalidCommand, "argv", "argument %d contains a NUL byte", i)
		}
		if len(a) > MaxArgLen {
			return invalid(errinfo.ReasonInvalidCommand, "argv", "argument %d is %d bytes, the limit is %d (the kernel's limit for one argument); pass large data on stdin or in a file", i, len(a), MaxArgLen)
		}
	}
	if strings.IndexByte(st.GetShell(), 0) >= 0 {
		return invalid(errinfo.ReasonInvalidCommand, "shell", "contains a NUL byte")
	}
	if n := len(st.GetShell()); n > MaxArgLen {
		return invalid(errinfo.ReasonInvalidCommand, "shell", "is %d bytes, the limit is %d (the kernel's limit for one argument); pass large data on stdin or in a file", n, MaxArgLen)
	}
	if len(st.GetArgv()) > 0 && st.GetShell() != "" {
		return invalid(errinfo.ReasonInvalidCommand, "argv", "give either argv or shell, not both")
	}
	if len(st.GetArgv()) == 0 && st.GetShell() == "" {
		return invalid(errinfo.ReasonInvalidCommand, "argv", "argv or shell is required")
	}
	if len(st.GetArgv()) > 0 && st.GetArgv()[0] == "" {
		return invalid(errinfo.ReasonInvalidCommand, "argv", "argv[0] (the program) is empty")
	}
	if _, err := agent.CleanPath(st.GetWorkingDir()); err != nil {
		return invalid(errinfo.ReasonInvalidPath, "working_dir", "%v", err)
	}
	if t := st.GetTimeout(); t != nil {
		if err := t.CheckValid(); err != nil || t.AsDuration() < 0 {
			return invalid(errinfo.ReasonInvalidDuration, "timeout", "must be a valid, non-negative duration")
		}
	}
	if n := st.GetMaxOutputBytes(); n < 0 || n > agent.MaxMaxOutput {
		return invalid(errinfo.ReasonInvalidValue, "max_output_bytes", "must be between 0 and %d, got %d", agent.MaxMaxOutput, n)
	}
	if err := agent.CheckPty(st.GetPty()); err != nil {
		return invalid(errinfo.ReasonInvalidTerminal, "pty", "%v", err)
	}
	return checkEnv("env", st.GetEnv())
}

func checkPath(field, p string) error {
	if _, err := agent.CleanPath(p); err != nil {
		return invalid(errinfo.ReasonInvalidPath, field, "%v", err)
	}
	return nil
}

// Exec runs a command in a sandbox, streaming in both directions.
func (s *Server) Exec(stream sandpodv1.SandboxService_ExecServer) error {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return invalid(errinfo.ReasonInvalidStream, "start", "the stream ended before its first message, which must be start")
	}
	if err != nil {
		return err
	}
	st := first.GetStart()
	if st == nil {
		return invalid(errinfo.ReasonInvalidStream, "start", "the first message of an exec must be start")
	}
	if err := checkExecStart(st); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	client, actx, ep, release, err := s.agentFor(ctx, st.GetNamespace(), st.GetSandbox())
	if err != nil {
		return err
	}
	defer release()
	if len(ep.Env) > 0 {
		env := make(map[string]string, len(ep.Env)+len(st.GetEnv()))
		for k, v := range ep.Env {
			env[k] = v
		}
		for k, v := range st.GetEnv() {
			env[k] = v
		}
		st.Env = env
	}
	up, err := client.Exec(actx)
	if err != nil {
		return agentError(st.GetSandbox(), err)
	}
	if err := up.Send(first); err != nil {
		_, rerr := up.Recv()
		return agentError(st.GetSandbox(), rerr)
	}
	// refused holds the error of a client message that ends the call (a
	// second start, a bad resize): the command is killed, and the caller
	// told why rather than of the cancellation.
	var refused atomic.Pointer[error]
	refuse := func(err error) {
		refused.Store(&err)
		cancel()
	}
	answered := false
	// Client messages are forwarded as they come, in order. up.Send waits
	// only when the agent stops reading, which it does only for a client
	// that overruns the stdin window of ExecStarted (the agent queues stdin
	// within it and reads on); then this hop passes the same gRPC
	// back-pressure on to the client. So a client within the window never
	// has a signal stuck here either.
	go func() {
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				_ = up.CloseSend()
				return
			}
			if err != nil {
				cancel() // the caller is gone: the agent kills the command
				return
			}
			if msg.GetStart() != nil {
				refuse(invalid(errinfo.ReasonInvalidStream, "start", "only the first message of an exec may be start; the command was killed"))
				return
			}
			if err := checkResize(st, msg); err != nil {
				refuse(err)
				return
			}
			if err := up.Send(msg); err != nil {
				return
			}
		}
	}()
	for {
		msg, err := up.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if e := refused.Load(); e != nil {
				return *e
			}
			return agentErrorAfter(st.GetSandbox(), err, answered)
		}
		answered = true
		presentExitCode(msg)
		if err := stream.Send(msg); err != nil {
			return err
		}
	}
}

// checkResize checks a resize message of an exec: only a terminal has a
// size to change.
func checkResize(st *sandpodv1.ExecStart, msg *sandpodv1.ExecRequest) error {
	m, ok := msg.GetMsg().(*sandpodv1.ExecRequest_Resize)
	if !ok {
		return nil
	}
	r := m.Resize
	if st.GetPty() == nil {
		return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonNoTerminal, "%s; the command was killed", agent.ErrNoTerminal)
	}
	if err := agent.CheckTerminalSize(r); err != nil {
		return invalid(errinfo.ReasonInvalidTerminal, "resize", "%v; the command was killed", err)
	}
	return nil
}

// presentExitCode sets exit_code on an ExitStatus that has none: an agent
// older than the field's explicit presence leaves a 0 out (it always sent
// -1 for a signal), and JSON clients such as grpcurl should read exitCode 0.
func presentExitCode(msg *sandpodv1.ExecResponse) {
	if ex := msg.GetExit(); ex != nil && ex.ExitCode == nil {
		ex.ExitCode = proto.Int32(0)
	}
}

// ReadFile streams a file out of a sandbox.
func (s *Server) ReadFile(req *sandpodv1.ReadFileRequest, stream sandpodv1.SandboxService_ReadFileServer) error {
	if err := checkPath("path", req.GetPath()); err != nil {
		return err
	}
	if req.GetOffset() < 0 {
		return invalid(errinfo.ReasonInvalidValue, "offset", "must not be negative, got %d", req.GetOffset())
	}
	if req.GetLength() < 0 {
		return invalid(errinfo.ReasonInvalidValue, "length", "must not be negative, got %d (0 reads to the end)", req.GetLength())
	}
	client, actx, _, release, err := s.agentFor(stream.Context(), req.GetNamespace(), req.GetSandbox())
	if err != nil {
		return err
	}
	defer release()
	down, err := client.ReadFile(actx, req)
	if err != nil {
		return agentError(req.GetSandbox(), err)
	}
	return forward(req.GetSandbox(), down.Recv, stream.Send)
}

// WriteFile streams a file into a sandbox; it appears atomically.
func (s *Server) WriteFile(stream sandpodv1.SandboxService_WriteFileServer) error {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return invalid(errinfo.ReasonInvalidStream, "header", "the stream ended before its first message, which must be the header")
	}
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return invalid(errinfo.ReasonInvalidStream, "header", "the first message of a write must be the header")
	}
	if err := checkPath("path", h.GetPath()); err != nil {
		return err
	}
	client, actx, _, release, err := s.agentFor(stream.Context(), h.GetNamespace(), h.GetSandbox())
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(actx)
	defer cancel()
	up, err := client.WriteFile(ctx)
	if err != nil {
		return agentError(h.GetSandbox(), err)
	}
	msg := first
	for {
		if err := up.Send(msg); err != nil {
			_, rerr := up.CloseAndRecv()
			return agentError(h.GetSandbox(), rerr)
		}
		msg, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			cancel() // an aborted upload leaves the old file in place
			return err
		}
	}
	resp, err := up.CloseAndRecv()
	if err != nil {
		return agentError(h.GetSandbox(), err)
	}
	return stream.SendAndClose(resp)
}

// fileRequest is a unary file call: it names a sandbox and a path.
type fileRequest interface {
	GetSandbox() string
	GetNamespace() string
	GetPath() string
}

// forwardFile checks a unary file call and forwards it to the agent.
func forwardFile[Req fileRequest, Resp any](s *Server, ctx context.Context, req Req,
	call func(sandpodv1.AgentServiceClient, context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	if err := checkPath("path", req.GetPath()); err != nil {
		return zero, err
	}
	client, actx, _, release, err := s.agentFor(ctx, req.GetNamespace(), req.GetSandbox())
	if err != nil {
		return zero, err
	}
	defer release()
	resp, err := call(client, actx, req)
	return resp, agentError(req.GetSandbox(), err)
}

// ListFiles lists one page of a directory in a sandbox. The agent makes
// and checks the page tokens (only it knows which directory a relative path
// names); the page size and the token's form are checked here too, so
// garbage is refused without a trip to the agent.
func (s *Server) ListFiles(ctx context.Context, req *sandpodv1.ListFilesRequest) (*sandpodv1.ListFilesResponse, error) {
	if err := checkPath("path", req.GetPath()); err != nil {
		return nil, err
	}
	if _, err := agent.ListPageSize(req.GetPageSize()); err != nil {
		return nil, invalid(errinfo.ReasonInvalidPage, "page_size", "%v", err)
	}
	if err := agent.CheckListToken(req.GetPageToken()); err != nil {
		return nil, invalid(errinfo.ReasonInvalidPage, "page_token", "%v", err)
	}
	return forwardFile(s, ctx, req, func(c sandpodv1.AgentServiceClient, ctx context.Context, r *sandpodv1.ListFilesRequest) (*sandpodv1.ListFilesResponse, error) {
		return c.ListFiles(ctx, r)
	})
}

// StatFile describes a path in a sandbox.
func (s *Server) StatFile(ctx context.Context, req *sandpodv1.StatFileRequest) (*sandpodv1.StatFileResponse, error) {
	return forwardFile(s, ctx, req, func(c sandpodv1.AgentServiceClient, ctx context.Context, r *sandpodv1.StatFileRequest) (*sandpodv1.StatFileResponse, error) {
		return c.StatFile(ctx, r)
	})
}

// RemoveFile removes a path in a sandbox.
func (s *Server) RemoveFile(ctx context.Context, req *sandpodv1.RemoveFileRequest) (*sandpodv1.RemoveFileResponse, error) {
	return forwardFile(s, ctx, req, func(c sandpodv1.AgentServiceClient, ctx context.Context, r *sandpodv1.RemoveFileRequest) (*sandpodv1.RemoveFileResponse, error) {
		return c.RemoveFile(ctx, r)
	})
}

// MakeDir creates a directory in a sandbox.
func (s *Server) MakeDir(ctx context.Context, req *sandpodv1.MakeDirRequest) (*sandpodv1.MakeDirResponse, error) {
	return forwardFile(s, ctx, req, func(c sandpodv1.AgentServiceClient, ctx context.Context, r *sandpodv1.MakeDirRequest) (*sandpodv1.MakeDirResponse, error) {
		return c.MakeDir(ctx, r)
	})
}

// WatchFiles streams changes under a directory of a sandbox. The agent
// checks that the path is a directory (only it sees the sandbox's files).
func (s *Server) WatchFiles(req *sandpodv1.WatchFilesRequest, stream sandpodv1.SandboxService_WatchFilesServer) error {
	if err := checkPath("path", req.GetPath()); err != nil {
		return err
	}
	client, actx, _, release, err := s.agentFor(stream.Context(), req.GetNamespace(), req.GetSandbox())
	if err != nil {
		return err
	}
	defer release()
	down, err := client.WatchFiles(actx, req)
	if err != nil {
		return agentError(req.GetSandbox(), err)
	}
	return forward(req.GetSandbox(), down.Recv, stream.Send)
}

// forward relays an agent's server stream to the caller until it ends: an
// error after the first message is the agent's failure mid-stream
// (agentErrorAfter), so it is not mistaken for a refusal of the call.
func forward[T any](sandbox string, recv func() (T, error), send func(T) error) error {
	for answered := false; ; answered = true {
		msg, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return agentErrorAfter(sandbox, err, answered)
		}
		if err := send(msg); err != nil {
			return err
		}
	}
}
