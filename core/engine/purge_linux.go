package engine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Purge stops every sandbox process tree of a state directory and removes
// their cgroups, leaving the files in place. It is for an engine that is not
// running: a test's teardown, or an operator giving up on a state directory.
// It kills what the store records and, as a safety net, every container in
// the state directory's runc state. It returns how many process trees it
// stopped.
func Purge(stateDir string) (int, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return 0, err
	}
	killed := 0
	rt := runc{root: filepath.Join(abs, "runc")}
	rt.bin, _ = findRunc("", mustExecutable())
	if st, err := openStore(filepath.Join(abs, "state.db")); err == nil {
		recs, _, _, _ := st.loadAll()
		st.close()
		for _, r := range recs {
			if p := adoptProcess(rt, containerID(&r), r.PID, r.PIDStart); p != nil {
				if p.kill(10*time.Second) == nil {
					killed++
				}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	// runc kills and removes what is left of every container (one the
	// engine started but had not recorded yet): processes, state, cgroups.
	if rt.bin != "" {
		for _, id := range rt.list() {
			if rt.running(id) {
				killed++
			}
			_ = rt.remove(id)
		}
	}
	_ = os.RemoveAll(socketDir(abs))
	return killed, nil
}

func mustExecutable() string {
	exe, _ := os.Executable()
	return exe
}
