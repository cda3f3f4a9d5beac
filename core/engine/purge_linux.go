package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Purge stops every sandbox process tree of a state directory and removes
// their cgroups, leaving the files in place. It is for an engine that is not
// running: a test's teardown, or an operator giving up on a state directory.
// It kills what the store records and, as a safety net, any agent found in
// /proc whose root lies under the state directory. It returns how many
// process trees it stopped.
func Purge(stateDir string) (int, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return 0, err
	}
	killed := 0
	cg := detectCgroups()
	// Read-only, and a damaged store is no reason to leave sandboxes
	// running: what records it still yields are used, the /proc scan below
	// finds the rest. Only a running serve (the store is locked) stops it.
	f, err := inspectStore(filepath.Join(abs, storeFile), lockWait)
	if err != nil {
		return 0, err
	}
	for _, r := range f.records {
		if p := adoptProcess(r.PID, r.PIDStart); p != nil {
			if p.kill(10*time.Second) == nil {
				killed++
			}
		}
		_ = cg.removeAll(cgroupID(&r))
	}
	killed += killStrays(filepath.Join(abs, "sandboxes") + "/")
	_ = os.RemoveAll(socketDir(abs))
	return killed, nil
}

// killStrays SIGKILLs sandbox inits whose --root lies under prefix.
func killStrays(prefix string) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := bytes.Split(cmdline, []byte{0})
		if len(args) < 2 || string(args[1]) != "agent" {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if string(args[i]) == "--root" && bytes.HasPrefix(args[i+1], []byte(prefix)) {
				// The init and its agent child both match; count trees once.
				if syscall.Kill(pid, syscall.SIGKILL) == nil && string(args[0]) != "/proc/self/exe" {
					n++
				}
				break
			}
		}
	}
	return n
}
