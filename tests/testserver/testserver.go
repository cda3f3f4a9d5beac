// Package testserver runs the real `sandpod serve` binary for tests: built
// once per test binary from this module, started on a free loopback port with
// its own state directory, ready when its gRPC health check says SERVING.
package testserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sandpod/sandpod/hack/fixtures"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// PythonTemplate is the YAML of the "python" SandboxTemplate the tests and
// benchmarks share (hack/fixtures).
var PythonTemplate = fixtures.PythonTemplate

// PythonPool is PythonTemplate with a warm pool "python" of replicas.
func PythonPool(replicas int) string { return fixtures.PythonPool(replicas) }

// DefaultConfig is the python template with a pool of 2.
var DefaultConfig = PythonPool(2)

// Options configure a server.
type Options struct {
	// Config is the YAML of templates and pools; DefaultConfig when empty.
	Config string
	// Token, when set, is required from every caller.
	Token string
	// ExtraArgs are appended to `sandpod serve`.
	ExtraArgs []string
	// DialOptions replace the plaintext credentials of Conn (e.g. TLS).
	DialOptions []grpc.DialOption
	// Wrap, when set, is a command that runs serve: the sandpod binary
	// and its arguments are appended (e.g. a mount namespace of its own).
	Wrap []string
	// ProcessGroup starts serve as the leader of a process group of its
	// own, as a shell starts a foreground job, so that Interrupt reaches
	// every process of the group as a terminal's Ctrl-C does.
	ProcessGroup bool
}

// Server is a running `sandpod serve`.
type Server struct {
	opts   Options
	bin    string
	dir    string
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	// stopping is set before the harness itself ends serve, so that any
	// other exit is reported with serve's log (a crash mid-test would
	// otherwise show only as "connection refused" in later tests).
	stopping atomic.Bool
	logPath  string
	conn     *grpc.ClientConn
	stopOnce sync.Once
	// reasons fails the test on an error the server sent without an
	// ErrorInfo reason (reasons.go).
	reasons reasonCheck
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary returns the path of a sandpod binary built from this module, with
// sandpod-agent beside it (or $SANDPOD_BIN when set).
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("SANDPOD_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "sandpod-testbin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "sandpod")
		// The agent beside it, where serve looks for it (as make build).
		for _, b := range [][2]string{{builtBin, "./cmd/sandpod"}, {filepath.Join(dir, "sandpod-agent"), "./cmd/sandpod-agent"}} {
			cmd := exec.Command("go", "build", "-o", b[0], b[1])
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// Start starts a server; it is stopped, and every sandbox it made deleted,
// when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Config == "" {
		opts.Config = DefaultConfig
	}
	s := &Server{opts: opts, bin: Binary(t), dir: t.TempDir()}
	// Sandboxes reach their root file systems under the state directory as
	// unprivileged host ids: its parents must be searchable (not listable).
	for _, d := range []string{s.dir, filepath.Dir(s.dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.dir, "config.yaml"), []byte(opts.Config), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts.Token != "" {
		if err := os.WriteFile(filepath.Join(s.dir, "tokens"), []byte(opts.Token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.addr = FreeAddr(t)
	s.start(t)
	t.Cleanup(func() { s.cleanup(t) })
	return s
}

// Addr is host:port of the gRPC API.
func (s *Server) Addr() string { return s.addr }

// PID is the process id of the running serve.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// StateDir is the server's state directory.
func (s *Server) StateDir() string { return filepath.Join(s.dir, "state") }

// Conn is a client connection to the server (with the token, if any).
func (s *Server) Conn() *grpc.ClientConn { return s.conn }

// Client is a raw SandboxService client on Conn.
func (s *Server) Client() sandpodv1.SandboxServiceClient {
	return sandpodv1.NewSandboxServiceClient(s.conn)
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	args := []string{"serve", "--listen", s.addr, "--state-dir", s.StateDir(), "--config", filepath.Join(s.dir, "config.yaml")}
	if s.opts.Token != "" {
		args = append(args, "--token-file", filepath.Join(s.dir, "tokens"))
	}
	args = append(args, s.opts.ExtraArgs...)
	s.logPath = filepath.Join(s.dir, "serve.log")
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	s.cmd = exec.Command(s.bin, args...)
	if len(s.opts.Wrap) > 0 {
		s.cmd = exec.Command(s.opts.Wrap[0], append(append(s.opts.Wrap[1:len(s.opts.Wrap):len(s.opts.Wrap)], s.bin), args...)...)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if s.opts.ProcessGroup {
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.exited = make(chan struct{})
	s.stopping.Store(false)
	go s.watchExit(s.cmd, s.exited)
	if s.conn == nil {
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if len(s.opts.DialOptions) > 0 {
			opts = s.opts.DialOptions
		}
		if s.opts.Token != "" {
			opts = append(opts, grpc.WithPerRPCCredentials(bearer(s.opts.Token)))
		}
		opts = append(opts, grpc.WithChainUnaryInterceptor(s.reasons.unary), grpc.WithChainStreamInterceptor(s.reasons.stream))
		s.conn, err = grpc.NewClient(s.addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
	}
	s.waitHealthy(t)
}

// watchExit waits for serve to exit and, unless the harness ended it,
// prints how it ended and its log to the test binary's stderr, which
// `go test` shows with the failing package.
func (s *Server) watchExit(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	if !s.stopping.Load() {
		fmt.Fprintf(os.Stderr, "\n=== sandpod serve (pid %d, %s) exited on its own: %v; its log:\n%s=== end of the serve log\n",
			cmd.Process.Pid, s.addr, err, s.Log())
	}
	close(done)
}

func (s *Server) waitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := healthpb.NewHealthClient(s.conn)
	for {
		// A serve that takes long to start (a restart reattaching many
		// sandboxes' disks) has left the channel backing off for tens of
		// seconds: dial again now, not at the end of the back-off.
		s.conn.ResetConnectBackoff()
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := h.Check(rctx, &healthpb.HealthCheckRequest{})
		rcancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		select {
		case <-s.exited:
			t.Fatalf("sandpod serve exited during start:\n%s", s.Log())
		case <-ctx.Done():
			t.Fatalf("sandpod serve not healthy within 60s (last error %v):\n%s", err, s.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Log returns what the server printed so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// Stop sends SIGTERM and waits for the server to exit.
func (s *Server) Stop(t testing.TB) { s.signal(t, syscall.SIGTERM) }

// Kill sends SIGKILL (a crash) and waits for the server to exit.
func (s *Server) Kill(t testing.TB) { s.signal(t, syscall.SIGKILL) }

// Interrupt is Ctrl-C in the terminal that runs serve in the foreground:
// SIGINT to its whole process group (with Options.ProcessGroup; to serve
// alone otherwise). It waits for serve to exit.
func (s *Server) Interrupt(t testing.TB) {
	t.Helper()
	if !s.opts.ProcessGroup {
		s.signal(t, syscall.SIGINT)
		return
	}
	s.stopping.Store(true)
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatalf("SIGINT to the process group of serve: %v", err)
	}
	s.wait(t, syscall.SIGINT)
}

func (s *Server) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	s.stopping.Store(true)
	_ = s.cmd.Process.Signal(sig)
	s.wait(t, sig)
}

// wait waits for serve to exit after sig.
func (s *Server) wait(t testing.TB, sig syscall.Signal) {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		t.Errorf("sandpod serve ignored %v for 30s", sig)
	}
}

// Restart stops the server (SIGTERM) and starts it again on the same port
// and state directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.start(t)
}

// StartAgain starts a server that was stopped or killed.
func (s *Server) StartAgain(t testing.TB) {
	t.Helper()
	s.start(t)
}

// cleanup deletes every sandbox (so no agent process outlives the test) and
// stops the server.
func (s *Server) cleanup(t testing.TB) {
	for _, f := range s.reasons.failures() {
		t.Errorf("the server sent an error without an ErrorInfo reason (see core/api/errinfo): %s", f)
	}
	select {
	case <-s.exited:
		s.start(t) // to clean up what it made
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client()
	if pools, err := c.ListWarmPools(ctx, &sandpodv1.ListWarmPoolsRequest{}); err == nil {
		for _, p := range pools.GetWarmPools() {
			_, _ = c.ScaleWarmPool(ctx, &sandpodv1.ScaleWarmPoolRequest{Name: p.GetName(), Namespace: p.GetNamespace()})
		}
	}
	for _, ns := range []string{"", "team-a", "team-b"} {
		list, err := c.ListSandboxes(ctx, &sandpodv1.ListSandboxesRequest{Namespace: ns, IncludePoolMembers: true, PageSize: 1000})
		if err != nil {
			t.Logf("cleanup: list: %v", err)
			continue
		}
		for _, sb := range list.GetSandboxes() {
			_, _ = c.DeleteSandbox(ctx, &sandpodv1.DeleteSandboxRequest{Name: sb.GetName(), Namespace: sb.GetNamespace()})
		}
	}
	s.Stop(t)
	_ = s.conn.Close()
	// Every start of this server appended to the one log.
	CheckNoRace(t, "sandpod serve", s.Log())
	// A pool member still starting when the list above ran would outlive
	// the test: purge stops whatever the state directory still runs.
	if out, err := exec.Command(s.bin, "purge", "--state-dir", s.StateDir()).CombinedOutput(); err != nil {
		t.Errorf("sandpod purge: %v\n%s", err, out)
	}
	// A `runc run` of a pool member that serve was starting when it
	// stopped is killed with serve, but its `runc init` may still be
	// making mount points in the member's root file system for a moment:
	// the state directory is removed here, retrying, before the test's
	// own TempDir cleanup tries once and fails on a directory not empty.
	var err error
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = os.RemoveAll(s.StateDir()); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Errorf("remove the state directory: %v", err)
	}
}

// FreeAddr is a free loopback address (127.0.0.1:port) to listen on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }
