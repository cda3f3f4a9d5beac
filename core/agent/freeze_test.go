package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// SetPaused stops a real process tree (this test's children, the agent's
// own tree here: it runs without an init), including one that setsid's
// away and one that forks while counting; exec and file calls are refused
// while paused; resume continues the same processes where they stopped.
func TestSetPausedStopsTheTreeAndContinuesIt(t *testing.T) {
	dir := t.TempDir()
	srv, err := New(Config{Sandbox: "sb", Root: dir, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	conn := serveInMemory(t, srv)
	ctx := metadata.AppendToOutgoingContext(context.Background(), agentconn.SecretMetadataKey, "s")
	agent := sandpodv1.NewAgentServiceClient(conn)

	// A counter in the shell's memory, written to a file; a second one
	// started under setsid; each iteration forks (the $(...) and the mv).
	count := filepath.Join(dir, "count")
	loop := `i=0; while :; do i=$((i+1)); echo $i > ` + count + `.$$; mv ` + count + `.$$ ` + count + `$1; sleep 0.02; done`
	a := exec.Command("sh", "-c", loop, "sh", "")
	b := exec.Command("setsid", "sh", "-c", loop, "sh", "-b")
	for _, c := range []*exec.Cmd{a, b} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func(c *exec.Cmd) { _ = c.Process.Kill(); _, _ = c.Process.Wait() }(c)
	}
	read := func(suffix string) int {
		data, _ := os.ReadFile(count + suffix)
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("both counters", func() bool { return read("") > 3 && read("-b") > 3 })

	resp, err := agent.SetPaused(ctx, &sandpodv1.SetPausedRequest{Paused: true})
	if err != nil || !resp.GetPaused() || resp.GetProcesses() < 2 {
		t.Fatalf("pause: %v %v, want paused with at least 2 processes", resp, err)
	}
	// Stopped, or (as stopAll counts it) in the kernel with the stop
	// pending: a shell waiting in vfork for a child this pause stopped
	// before it exec'd stays in D until the resume.
	for _, c := range []*exec.Cmd{a, b} {
		if st := procState(c.Process.Pid); st != 'T' && (st != 'D' || !stopPending(c.Process.Pid)) {
			t.Errorf("process %d is in state %q after pause, want T (or D with SIGSTOP pending)", c.Process.Pid, st)
		}
	}
	va, vb := read(""), read("-b")
	time.Sleep(time.Second)
	if read("") != va || read("-b") != vb {
		t.Fatalf("counters moved while paused: %d→%d, %d→%d", va, read(""), vb, read("-b"))
	}
	_, err = agent.ListFiles(ctx, &sandpodv1.ListFilesRequest{Path: "."})
	if status.Code(err) != codes.FailedPrecondition || errinfo.Reason(err) != errinfo.ReasonSandboxPaused {
		t.Fatalf("a file call while paused: %v, want FAILED_PRECONDITION reason SANDBOX_PAUSED", err)
	}
	if info, _ := agent.GetAgentInfo(ctx, &sandpodv1.GetAgentInfoRequest{}); info.GetSandbox() != "sb" {
		t.Fatal("GetAgentInfo must answer while paused")
	}

	if _, err := agent.SetPaused(ctx, &sandpodv1.SetPausedRequest{Paused: false}); err != nil {
		t.Fatal(err)
	}
	waitFor("the counters to continue", func() bool { return read("") > va && read("-b") > vb })
	if read("") < va {
		t.Fatal("the counter restarted")
	}
	if _, err := agent.ListFiles(ctx, &sandpodv1.ListFilesRequest{Path: "."}); err != nil {
		t.Fatalf("a file call after resume: %v", err)
	}
	if err := a.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the first counter is gone after resume: %v", err)
	}
}

// TestSetPausedCatchesASpawnLoop: a shell starting programs as fast as it
// can, round after round: each pause must settle with the loop stopped
// (children forked during the passes are caught; a parent left waiting in
// the kernel for a vfork child stopped before its exec counts as stopped,
// see stopAll), and each resume must let it go on.
func TestSetPausedCatchesASpawnLoop(t *testing.T) {
	dir := t.TempDir()
	srv, err := New(Config{Sandbox: "sb", Root: dir, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(dir, "n")
	loop := exec.Command("sh", "-c", `i=0; while :; do /bin/true; i=$((i+1)); echo $i > `+count+`; done`)
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = loop.Process.Kill(); _, _ = loop.Process.Wait() }()
	read := func() int {
		b, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	for end := time.Now().Add(60 * time.Second); read() < 10; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the loop did not start")
		}
	}
	for round := 0; round < 20; round++ {
		if _, err := srv.SetPaused(context.Background(), &sandpodv1.SetPausedRequest{Paused: true}); err != nil {
			t.Fatalf("round %d: pause: %v", round, err)
		}
		v := read()
		time.Sleep(50 * time.Millisecond)
		if got := read(); got != v {
			t.Fatalf("round %d: the loop ran on while paused (%d → %d)", round, v, got)
		}
		if _, err := srv.SetPaused(context.Background(), &sandpodv1.SetPausedRequest{Paused: false}); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(60 * time.Second); read() <= v; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("round %d: the loop did not go on after resume", round)
			}
		}
	}
}
