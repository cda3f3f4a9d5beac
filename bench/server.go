package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sandpod/sandpod/hack/fixtures"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// server is one `sandpod serve` started by the benchmark.
type server struct {
	bin      string
	dir      string // temporary: config, state, log
	addr     string
	pprof    string
	httpAddr string // the HTTP/JSON API (--http-listen)
	e2bAddr  string // the E2B API (--e2b-listen)
	preview  string // the preview listener's address
	cmd      *exec.Cmd
	exited   chan struct{}
	logPath  string
	conn     *grpc.ClientConn
	api      sandpodv1.SandboxServiceClient
}

// ensureBinary returns bin, building it from ./cmd/sandpod when missing.

// forksPool is an empty warm pool of forks of the snapshot bench-seed (the
// snapshot rows scale it up once the snapshot exists).
const forksPool = `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: forks
spec:
  templateRef:
    name: python
  replicas: 0
  snapshot: bench-seed
`

func ensureBinary(bin string) (string, error) {
	if _, err := os.Stat(bin); err == nil {
		return filepath.Abs(bin)
	}
	fmt.Fprintf(os.Stderr, "bench: %s missing, building it\n", bin)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sandpod")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build -o %s ./cmd/sandpod: %w", bin, err)
	}
	return filepath.Abs(bin)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startServer starts `sandpod serve` on a free loopback port with its own
// state directory and waits for gRPC health SERVING.
func startServer(ctx context.Context, bin string, poolSize int, withPprof bool) (*server, error) {
	dir, err := os.MkdirTemp("", "sandpod-bench-")
	if err != nil {
		return nil, err
	}
	// Sandboxes reach their root file systems under the state directory as
	// unprivileged host ids: the directory must be searchable.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir, logPath: filepath.Join(dir, "serve.log"), exited: make(chan struct{})}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fixtures.PythonPool(poolSize)+forksPool), 0o644); err != nil {
		return nil, err
	}
	addrFile := filepath.Join(dir, "address")
	args := []string{"serve", "--listen", "127.0.0.1:0", "--address-file", addrFile,
		"--state-dir", filepath.Join(dir, "state"), "--config", cfg,
		"--preview-listen", "127.0.0.1:0", "--preview-address-file", filepath.Join(dir, "preview-address")}
	if s.httpAddr, err = freePort(); err != nil {
		return nil, err
	}
	args = append(args, "--http-listen", s.httpAddr)
	if s.e2bAddr, err = freePort(); err != nil {
		return nil, err
	}
	args = append(args, "--e2b-listen", s.e2bAddr)
	if withPprof {
		if s.pprof, err = freePort(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof", s.pprof)
	}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// If the benchmark dies, the server gets SIGTERM rather than lingering.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			s.addr = strings.TrimSpace(string(b))
			break
		}
		select {
		case <-s.exited:
			return s, fmt.Errorf("sandpod serve exited during start:\n%s", s.log())
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("sandpod serve wrote no address within 60s:\n%s", s.log())
		}
	}
	s.conn, err = grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return s, err
	}
	s.api = sandpodv1.NewSandboxServiceClient(s.conn)
	h := healthpb.NewHealthClient(s.conn)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := h.Check(rctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			b, _ := os.ReadFile(filepath.Join(dir, "preview-address"))
			s.preview = strings.TrimSpace(string(b))
			return s, nil
		}
		select {
		case <-s.exited:
			return s, fmt.Errorf("sandpod serve exited during start:\n%s", s.log())
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("sandpod serve not healthy within 60s (last error %v)", err)
		}
	}
}

func (s *server) log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// cleanup deletes every sandbox (pool members included, after scaling the
// pool to 0), stops the server with SIGTERM and makes sure no process of
// this state directory is left. It reports what it had to force.
func (s *server) cleanup(pool string) []string {
	var notes []string
	if s.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if _, err := s.api.ScaleWarmPool(ctx, &sandpodv1.ScaleWarmPoolRequest{Name: pool, Replicas: 0}); err != nil {
			notes = append(notes, fmt.Sprintf("cleanup: scale pool to 0: %v", err))
		}
		for pass := 0; pass < 5; pass++ {
			names, err := s.listAll(ctx)
			if err != nil {
				notes = append(notes, fmt.Sprintf("cleanup: list: %v", err))
				break
			}
			if len(names) == 0 {
				break
			}
			for _, n := range names {
				if _, err := s.api.DeleteSandbox(ctx, &sandpodv1.DeleteSandboxRequest{Name: n}); err != nil && pass == 4 {
					notes = append(notes, fmt.Sprintf("cleanup: delete %s: %v", n, err))
				}
			}
		}
		cancel()
		_ = s.conn.Close()
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			notes = append(notes, "cleanup: sandpod serve ignored SIGTERM for 20s; killed")
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	// Sandboxes outlive the server by design; after the deletes above there
	// should be none. A process the kernel is still tearing down (its pid
	// namespace's init already gone) may show for a moment: give those a
	// few seconds. Anything still running from our state directory after
	// that was started by our server: report it and end it by pid.
	left := procsUnder(s.dir)
	exiting, since := len(left), time.Now()
	for wait := 0; len(left) > 0 && wait < 50; wait++ {
		time.Sleep(100 * time.Millisecond)
		left = procsUnder(s.dir)
	}
	if exiting > 0 && len(left) == 0 {
		notes = append(notes, fmt.Sprintf("cleanup: %d processes of deleted sandboxes were still exiting when the server stopped; gone within %s", exiting, time.Since(since).Round(100*time.Millisecond)))
	}
	for _, pid := range left {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		notes = append(notes, fmt.Sprintf("cleanup: process %d (%s; stat %s) was still running 5 s after delete+SIGTERM; killed", pid,
			bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '}), bytes.TrimSpace(stat)))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if os.Getenv("SANDPOD_BENCH_KEEP") == "" {
		// A member the pool refilled after the deletes keeps its disk
		// mounted (a loop device on its image): purge unmounts them, else
		// the removal would empty the mounted disks and leave the mounts.
		if out, err := exec.Command(s.bin, "purge", "--state-dir", filepath.Join(s.dir, "state")).CombinedOutput(); err != nil {
			notes = append(notes, fmt.Sprintf("cleanup: sandpod purge: %v: %s", err, bytes.TrimSpace(out)))
		}
		_ = os.RemoveAll(s.dir)
	}
	return notes
}

func (s *server) listAll(ctx context.Context) ([]string, error) {
	var names []string
	tok := ""
	for {
		resp, err := s.api.ListSandboxes(ctx, &sandpodv1.ListSandboxesRequest{IncludePoolMembers: true, PageSize: 1000, PageToken: tok})
		if err != nil {
			return names, err
		}
		for _, sb := range resp.GetSandboxes() {
			names = append(names, sb.GetName())
		}
		if tok = resp.GetNextPageToken(); tok == "" {
			return names, nil
		}
	}
}

// procsUnder lists processes whose command line mentions dir (the agents of
// our sandboxes: `sandpod agent --root <dir>/state/...`).
func procsUnder(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// cpuTicks is utime+stime+cutime+cstime of pid, in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 → f[11].
	var sum int64
	for _, k := range []int{11, 12, 13, 14} {
		if k < len(f) {
			v, _ := strconv.ParseInt(f[k], 10, 64)
			sum += v
		}
	}
	return sum
}
