package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Helpers that look at a sandbox from the host, as host root: which host
// ids its processes and files have.

// markedProcess starts `sleep` in a sandbox as its user, under a name of
// its own (marker), and returns its host PID.
func markedProcess(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, marker string) int {
	t.Helper()
	sh(t, c, sandbox, `setsid -f python3 -c 'import os, sys; os.execvp("sleep", [sys.argv[1], "3600"])' `+marker+" >/dev/null 2>&1")
	var pid int
	eventually(t, "process "+marker+" on the host", func() bool {
		pid = hostPIDOf(marker)
		return pid > 0
	})
	return pid
}

// hostPIDOf finds the host PID of the process whose argv[0] is marker.
func hostPIDOf(marker string) int {
	return hostProcess(func(args []string) bool { return args[0] == marker })
}

// hostProcess finds a host process whose arguments match (0: none).
func hostProcess(match func(args []string) bool) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && len(b) > 0 && match(strings.Split(string(b), "\x00")) {
			return pid
		}
	}
	return 0
}

// hostUID is the real uid of a host process, from /proc/PID/status.
func hostUID(t *testing.T, pid int) uint32 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			u, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			return uint32(u)
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return 0
}

// workspaceFileOwner writes a file in a sandbox's workspace, as its user,
// and returns the host uid that owns it (stat on the host).
func workspaceFileOwner(t *testing.T, c sandpodv1.SandboxServiceClient, stateDir, sandbox, file string) uint32 {
	t.Helper()
	sh(t, c, sandbox, "echo x > "+file)
	m, _ := filepath.Glob(filepath.Join(stateDir, "sandboxes", "*", sandbox, "work", file))
	if len(m) != 1 {
		t.Fatalf("workspace file %s of %s on the host: found %v", file, sandbox, m)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(m[0], &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid
}

// uniqueMarker names a process of one test run.
func uniqueMarker(prefix string) string {
	return prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}
