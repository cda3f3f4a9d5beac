package goclient_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// agentPID is the host PID of a local sandbox's agent (its init's child).
func agentPID(t *testing.T, name string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		argv, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimRight(argv, "\x00"), []byte{0})
		if len(args) > 3 && string(args[0]) == "/proc/self/exe" && string(args[1]) == "agent" &&
			bytes.Contains(argv, []byte("\x00--sandbox\x00"+name+"\x00")) {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	t.Fatalf("no agent process of sandbox %s", name)
	return 0
}

// WithRestartOnFailure(false) is sent and honoured: the local engine's
// policy (Always by default) would restart the crashed agent; this sandbox
// is reported Failed instead.
func TestRestartOnFailureOff(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb, err := c.Create(ctx, "cold", sandpod.WithRestartOnFailure(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Delete(ctx) })
	if err := syscall.Kill(agentPID(t, sb.Name()), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		info, err := sb.Refresh(ctx)
		if err == nil && info.Phase == sandpod.PhaseFailed {
			if info.AgentRestarts != 0 {
				t.Errorf("agent restarts %d, want 0", info.AgentRestarts)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Failed after the crash: %+v, %v", info, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
