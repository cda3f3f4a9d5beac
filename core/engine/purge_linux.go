package engine

import (
	"bytes"
	"errors"
	"io/fs"
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
	if st, err := openStore(filepath.Join(abs, "state.db")); err == nil {
		recs, _, _, _ := st.loadAll()
		st.close()
		for _, r := range recs {
			if p := adoptProcess(r.PID, r.PIDStart); p != nil {
				if p.kill(10*time.Second) == nil {
					killed++
				}
			}
			_ = cg.removeAll(cgroupID(&r))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
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
