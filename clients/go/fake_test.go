package sandpod

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
)

// fakeServer is an in-memory SandboxService for unit tests of the
// client's own logic (retries, error mapping, stream handling). The
// integration tests use the real server.
type fakeServer struct {
	pb.UnimplementedSandboxServiceServer

	mu          sync.Mutex
	fail        map[string][]codes.Code // per method: codes to fail with, in order
	calls       map[string]int
	requestIDs  []string
	auth        []string
	files       map[string][]byte
	readBreakAt int // ReadFile fails with Unavailable after this many bytes, once

	// Exec's stdin flow control: its window, and the most stdin it ever
	// had unacknowledged (a client that honours the window keeps it so).
	maxUnacked    int64
	stdinReceived int64
}

// fakeWindow is the stdin window of the fake's "cat" and "sleep".
const fakeWindow = 1 << 20

func newFakeServer() *fakeServer {
	return &fakeServer{fail: map[string][]codes.Code{}, calls: map[string]int{}, files: map[string][]byte{}}
}

// failNext makes the next calls of method fail with the given codes (OK:
// succeed).
func (f *fakeServer) failNext(method string, cs ...codes.Code) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], cs...)
}

func (f *fakeServer) enter(ctx context.Context, method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		f.auth = append(f.auth, md.Get("authorization")...)
	}
	if cs := f.fail[method]; len(cs) > 0 {
		f.fail[method] = cs[1:]
		if cs[0] == codes.OK {
			return nil
		}
		return status.Errorf(cs[0], "injected %s", cs[0])
	}
	return nil
}

func (f *fakeServer) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakeServer) ClaimSandbox(ctx context.Context, req *pb.ClaimSandboxRequest) (*pb.ClaimSandboxResponse, error) {
	f.mu.Lock()
	f.requestIDs = append(f.requestIDs, req.GetRequestId())
	f.mu.Unlock()
	if err := f.enter(ctx, "claim"); err != nil {
		return nil, err
	}
	return &pb.ClaimSandboxResponse{Warm: true, Sandbox: &pb.Sandbox{Name: "python-1", Namespace: req.GetNamespace(), Template: req.GetTemplate(), Phase: pb.Phase_PHASE_RUNNING}}, nil
}

func (f *fakeServer) GetSandbox(ctx context.Context, req *pb.GetSandboxRequest) (*pb.GetSandboxResponse, error) {
	if err := f.enter(ctx, "get"); err != nil {
		return nil, err
	}
	if req.GetName() != "python-1" {
		st, _ := status.New(codes.NotFound, "sandbox \""+req.GetName()+"\" not found").WithDetails()
		return nil, st.Err()
	}
	return &pb.GetSandboxResponse{Sandbox: &pb.Sandbox{Name: req.GetName(), Namespace: req.GetNamespace(), Phase: pb.Phase_PHASE_RUNNING}}, nil
}

func (f *fakeServer) DeleteSandbox(ctx context.Context, req *pb.DeleteSandboxRequest) (*pb.DeleteSandboxResponse, error) {
	if err := f.enter(ctx, "delete"); err != nil {
		return nil, err
	}
	return &pb.DeleteSandboxResponse{}, nil
}

func (f *fakeServer) ListSandboxes(ctx context.Context, req *pb.ListSandboxesRequest) (*pb.ListSandboxesResponse, error) {
	if err := f.enter(ctx, "list"); err != nil {
		return nil, err
	}
	// Three pages of two: tokens "", "2", "4".
	start := map[string]int{"": 0, "2": 2, "4": 4}[req.GetPageToken()]
	resp := &pb.ListSandboxesResponse{}
	for i := start; i < start+2; i++ {
		resp.Sandboxes = append(resp.Sandboxes, &pb.Sandbox{Name: string(rune('a' + i))})
	}
	if start < 4 {
		resp.NextPageToken = string(rune('0' + start + 2))
	}
	return resp, nil
}

func (f *fakeServer) SuspendSandbox(ctx context.Context, req *pb.SuspendSandboxRequest) (*pb.SuspendSandboxResponse, error) {
	if err := f.enter(ctx, "suspend"); err != nil {
		return nil, err
	}
	// Slow enough for a short per-call timeout to cut the first attempt.
	if f.count("suspend") == 1 {
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-time.After(10 * time.Second):
		}
	}
	return &pb.SuspendSandboxResponse{Sandbox: &pb.Sandbox{Name: req.GetName(), Phase: pb.Phase_PHASE_SUSPENDED}}, nil
}

// Exec echoes: "cat" copies stdin to stdout, acknowledging it; "sleep"
// reads no stdin (acknowledges none) and ends at a signal; anything else
// prints the command on stdout and "err" on stderr and exits with 3.
// "cat" and "sleep" have a stdin window of fakeWindow.
func (f *fakeServer) Exec(stream pb.SandboxService_ExecServer) error {
	if err := f.enter(stream.Context(), "exec"); err != nil {
		return err
	}
	m, err := stream.Recv()
	if err != nil {
		return err
	}
	start := m.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "first message must be start")
	}
	shell := start.GetShell()
	started := &pb.ExecStarted{Pid: 42}
	if shell == "cat" || shell == "sleep" {
		started.StdinWindow = fakeWindow
	}
	if err := stream.Send(&pb.ExecResponse{Msg: &pb.ExecResponse_Started{Started: started}}); err != nil {
		return err
	}
	exit := func(code int32) error {
		return stream.Send(&pb.ExecResponse{Msg: &pb.ExecResponse_Exit{Exit: &pb.ExitStatus{ExitCode: proto.Int32(code)}}})
	}
	if shell != "cat" && shell != "sleep" {
		_ = stream.Send(&pb.ExecResponse{Msg: &pb.ExecResponse_Stdout{Stdout: []byte(shell + "\n")}})
		_ = stream.Send(&pb.ExecResponse{Msg: &pb.ExecResponse_Stderr{Stderr: []byte("err\n")}})
		return exit(3)
	}
	var received, acked int64
	for {
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		switch x := m.GetMsg().(type) {
		case *pb.ExecRequest_Stdin:
			received += int64(len(x.Stdin))
			f.mu.Lock()
			f.stdinReceived = received
			f.maxUnacked = max(f.maxUnacked, received-acked)
			f.mu.Unlock()
			if shell == "sleep" {
				continue
			}
			if err := stream.Send(&pb.ExecResponse{Msg: &pb.ExecResponse_Stdout{Stdout: x.Stdin}}); err != nil {
				return err
			}
			acked = received
			if err := stream.Send(&pb.ExecResponse{Msg: &pb.ExecResponse_StdinAcked{StdinAcked: acked}}); err != nil {
				return err
			}
		case *pb.ExecRequest_CloseStdin:
			return exit(0)
		case *pb.ExecRequest_Signal:
			return stream.Send(&pb.ExecResponse{Msg: &pb.ExecResponse_Exit{Exit: &pb.ExitStatus{ExitCode: proto.Int32(-1), Signal: x.Signal}}})
		}
	}
}

func (f *fakeServer) WriteFile(stream pb.SandboxService_WriteFileServer) error {
	if err := f.enter(stream.Context(), "write"); err != nil {
		return err
	}
	m, err := stream.Recv()
	if err != nil {
		return err
	}
	path := m.GetHeader().GetPath()
	var data []byte
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		data = append(data, m.GetData()...)
	}
	f.mu.Lock()
	f.files[path] = data
	f.mu.Unlock()
	return stream.SendAndClose(&pb.WriteFileResponse{File: &pb.FileInfo{Path: path, Size: int64(len(data)), Mode: 0o644}})
}

// ReadFile sends 1000-byte chunks and, when readBreakAt is set, breaks
// once after that many bytes.
func (f *fakeServer) ReadFile(req *pb.ReadFileRequest, stream pb.SandboxService_ReadFileServer) error {
	if err := f.enter(stream.Context(), "read"); err != nil {
		return err
	}
	f.mu.Lock()
	data, ok := f.files[req.GetPath()]
	breakAt := f.readBreakAt
	f.readBreakAt = 0
	f.mu.Unlock()
	if !ok {
		return status.Error(codes.NotFound, "no such file")
	}
	data = data[req.GetOffset():]
	if l := req.GetLength(); l > 0 && l < int64(len(data)) {
		data = data[:l]
	}
	sent := 0
	for len(data) > 0 {
		if breakAt > 0 && sent >= breakAt {
			return status.Error(codes.Unavailable, "injected break")
		}
		n := min(1000, len(data))
		if err := stream.Send(&pb.ReadFileResponse{Data: data[:n]}); err != nil {
			return err
		}
		data, sent = data[n:], sent+n
	}
	return nil
}

// ListFiles lists a directory of 2500 entries "f0000".."f2499" in pages of
// 1000 (the token is the index to start at).
func (f *fakeServer) ListFiles(ctx context.Context, req *pb.ListFilesRequest) (*pb.ListFilesResponse, error) {
	if err := f.enter(ctx, "list files"); err != nil {
		return nil, err
	}
	start := 0
	if tok := req.GetPageToken(); tok != "" {
		if _, err := fmt.Sscanf(tok, "%d", &start); err != nil {
			return nil, status.Error(codes.InvalidArgument, "page_token: is not a token this server issued")
		}
	}
	const n, size = 2500, 1000
	resp := &pb.ListFilesResponse{}
	for i := start; i < min(start+size, n); i++ {
		name := fmt.Sprintf("f%04d", i)
		resp.Files = append(resp.Files, &pb.FileInfo{Path: req.GetPath() + "/" + name, Name: name})
	}
	if start+size < n {
		resp.NextPageToken = fmt.Sprint(start + size)
	}
	return resp, nil
}

func (f *fakeServer) StatFile(ctx context.Context, req *pb.StatFileRequest) (*pb.StatFileResponse, error) {
	if err := f.enter(ctx, "stat"); err != nil {
		return nil, err
	}
	return &pb.StatFileResponse{File: &pb.FileInfo{Path: req.GetPath()}}, nil
}

// startFake serves f over bufconn and returns a client for it.
func startFake(t *testing.T, f *fakeServer, opts ...Option) *Client {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	pb.RegisterSandboxServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	fast := RetryPolicy{InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond, MaxAttempts: 5}
	return New(conn, append([]Option{WithRetryPolicy(fast)}, opts...)...)
}

// WatchSandboxes sends one event per sandbox name in watchNames, then
// waits for the caller to go away.
func (f *fakeServer) WatchSandboxes(req *pb.WatchSandboxesRequest, stream pb.SandboxService_WatchSandboxesServer) error {
	if err := f.enter(stream.Context(), "watch"); err != nil {
		return err
	}
	for _, name := range []string{"a", "b"} {
		ev := &pb.WatchSandboxesResponse{Type: pb.WatchSandboxesResponse_EVENT_TYPE_ADDED, Sandbox: &pb.Sandbox{Name: name, Phase: pb.Phase_PHASE_RUNNING}}
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	<-stream.Context().Done()
	return nil
}
