package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/tests/testserver"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// readOnlyCgroups is a command prefix that runs its command in a private
// mount namespace where /sys/fs/cgroup and every cgroup file system below
// it are read-only (what an unprivileged container sees).
var readOnlyCgroups = []string{"unshare", "-m", "--propagation", "private", "sh", "-c", `
for m in /sys/fs/cgroup $(grep -E " - cgroup2? " /proc/self/mountinfo | cut -d" " -f5); do
  mount -o remount,bind,ro "$m" || exit 97
done
exec "$@"`, "sh"}

// Where it cannot make cgroups, serve refuses to start, and says what is
// missing and how to get past it, before it touches the state directory.
func TestServeRefusesWithoutWritableCgroups(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	// A state directory serve would take otherwise (its parents passable
	// by the sandboxes' ids): only the cgroups keep it from starting.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(readOnlyCgroups[0], append(readOnlyCgroups[1:len(readOnlyCgroups):len(readOnlyCgroups)],
		testserver.Binary(t), "serve", "--listen", "127.0.0.1:0", "--state-dir", state)...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-time.After(100 * time.Millisecond):
			if strings.Contains(out.String(), "sandpod serving") {
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("serve started with read-only cgroups (it should refuse):\n%s", out.String())
			}
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d (%v), want 1 (97: the test's read-only remount failed):\n%s", code, err, out.String())
	}
	msg := out.String()
	named := "/sys/fs/cgroup" // cgroup v2: the one hierarchy
	if fi, err := os.Stat("/sys/fs/cgroup/memory"); err == nil && fi.IsDir() {
		named = "/sys/fs/cgroup/memory" // v1: each hierarchy, memory among them
	}
	for _, want := range []string{
		"sandpod serve: cannot apply sandbox limits",
		named, "read-only file system", // what is missing, as the kernel said it
		"mounted read-write", "--no-limits", // the ways out
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, msg)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "state.db")); !os.IsNotExist(err) {
		t.Errorf("the refusing serve made a store: %v", err)
	}
}

// With --no-limits, the same host starts serve; it says at every start,
// and in ListTemplates, that nothing is limited; sandboxes run (without
// cgroups of their own) and pause is refused with the reason.
func TestNoLimitsRunsSandboxesWithoutCgroups(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Wrap: readOnlyCgroups, ExtraArgs: []string{"--no-limits"}})
	c := srv.Client()
	const warning = "running WITHOUT sandbox limits (--no-limits)"
	if n := strings.Count(srv.Log(), warning); n != 1 {
		t.Fatalf("the log says %d times that limits are off, want once per start:\n%s", n, srv.Log())
	}
	if !strings.Contains(srv.Log(), `limits="none (--no-limits`) {
		t.Errorf("the engine's start line does not say limits are none:\n%s", srv.Log())
	}
	ts, err := c.ListTemplates(ctx(t), &sandpodv1.ListTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.GetTemplates()) == 0 {
		t.Fatal("no template listed")
	}
	for _, tp := range ts.GetTemplates() {
		if tp.GetMemoryLimitBytes() != 0 || tp.GetCpuLimitMillis() != 0 || tp.GetPidsLimit() != 0 {
			t.Errorf("template %s reports limits %d bytes, %d millicores, %d pids that nothing applies",
				tp.GetName(), tp.GetMemoryLimitBytes(), tp.GetCpuLimitMillis(), tp.GetPidsLimit())
		}
	}
	sb, _ := claim(t, c, "python")
	if r := sh(t, c, sb.GetName(), "echo ran"); r.stdout != "ran\n" {
		t.Fatalf("a sandbox of a --no-limits server: %+v", r)
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", initPID(t, sb.GetName())))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cg), "sandpod") {
		t.Errorf("the sandbox is in a cgroup of the engine's:\n%s", cg)
	}
	_, err = c.PauseSandbox(ctx(t), &sandpodv1.PauseSandboxRequest{Name: sb.GetName()})
	wantCode(t, err, codes.FailedPrecondition, "--no-limits")

	srv.Restart(t)
	if n := strings.Count(srv.Log(), warning); n != 2 {
		t.Fatalf("after a restart the log says %d times that limits are off, want 2:\n%s", n, srv.Log())
	}
	if r := sh(t, c, sb.GetName(), "echo still"); r.stdout != "still\n" {
		t.Fatalf("the sandbox after serve's restart: %+v", r)
	}
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// limitsLayout is the cgroup layout serve reported applying limits with:
// "v1" or "v2". A server that applies none fails the test (serve does not
// start so without --no-limits).
func limitsLayout(t *testing.T, srv *testserver.Server) string {
	t.Helper()
	log := srv.Log()
	for _, v := range []string{"v1", "v2"} {
		if strings.Contains(log, `limits="cgroup `+v+":") {
			return v
		}
	}
	t.Fatalf("serve reported no cgroup layout it applies limits with:\n%s", log)
	return ""
}

// sandboxLimits reads, on the host, the memory, swap, pids and cpu limit
// files of the cgroups the sandbox's init is in, for the layout serve
// reported; names are the files', values as the kernel shows them.
func sandboxLimits(t *testing.T, srv *testserver.Server, name string) map[string]string {
	t.Helper()
	layout := limitsLayout(t, srv)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", initPID(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{} // controller ("" on v2) -> cgroup path
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			for _, ctl := range strings.Split(f[1], ",") {
				paths[ctl] = f[2]
			}
		}
	}
	files := map[string][]string{ // directory under /sys/fs/cgroup -> files
		"memory": {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
		"pids":   {"pids.max"},
		"cpu":    {"cpu.cfs_quota_us", "cpu.cfs_period_us"},
	}
	if layout == "v2" {
		files = map[string][]string{"": {"memory.max", "memory.swap.max", "pids.max", "cpu.max"}}
	}
	got := map[string]string{}
	for ctl, fs := range files {
		p, ok := paths[ctl]
		if !ok || !strings.HasPrefix(p, "/sandpod/sb-") {
			t.Fatalf("the sandbox's init is not in a %s cgroup of the engine's (cgroup %s): %v", layout, ctl, paths)
		}
		for _, f := range fs {
			v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctl, p, f))
			if os.IsNotExist(err) && f == "memory.memsw.limit_in_bytes" {
				continue // a kernel without swap accounting
			}
			if err != nil {
				t.Fatalf("%s of the sandbox: %v", f, err)
			}
			got[f] = strings.TrimSpace(string(v))
		}
	}
	return got
}

// wantLimits is what the limit files of a sandbox with memory bytes, cpu
// millicores and pids should hold on layout.
func wantLimits(layout string, memory, millis, pids int64, memsw bool) map[string]string {
	if layout == "v2" {
		return map[string]string{"memory.max": fmt.Sprint(memory), "memory.swap.max": "0",
			"pids.max": fmt.Sprint(pids), "cpu.max": fmt.Sprintf("%d 100000", millis*100)}
	}
	m := map[string]string{"memory.limit_in_bytes": fmt.Sprint(memory), "pids.max": fmt.Sprint(pids),
		"cpu.cfs_quota_us": fmt.Sprint(millis * 100), "cpu.cfs_period_us": "100000"}
	if memsw {
		m["memory.memsw.limit_in_bytes"] = fmt.Sprint(memory)
	}
	return m
}

func hasSwapAccounting() bool {
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return err == nil
}
