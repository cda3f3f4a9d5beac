package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandpod/sandpod/core/engine/cgroups"
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
	rt := runc{root: filepath.Join(abs, "runc"), cgroups: cgroups.Host(cgroups.HostRoot)}
	rt.bin, _ = findRunc("", mustExecutable())
	// Read-only, and a damaged store is no reason to leave sandboxes
	// running: what records it still yields are used, runc's own state
	// below finds the rest. Only a running serve (the store is locked)
	// stops it.
	f, err := inspectStore(filepath.Join(abs, storeFile), lockWait)
	if err != nil {
		return 0, err
	}
	for _, r := range f.records {
		if p := adoptProcess(rt, r.Container, cgroups.Container{}, r.PID, r.PIDStart); p != nil {
			if p.kill(10*time.Second) == nil {
				killed++
			}
		}
	}
	// runc kills and removes what is left of every container (one the
	// engine started but had not recorded yet): processes, state, cgroups.
	var ids []string
	if rt.bin != "" {
		ids = rt.list()
		for _, id := range ids {
			if rt.running(id) {
				killed++
			}
			_ = rt.remove(id)
		}
	}
	// runc gives up on cgroups whose killed processes have not all exited
	// yet; purge is about to exit, so it waits for them here.
	if left := rt.cgroups.AwaitRemoved(ids); len(left) > 0 {
		return killed, fmt.Errorf("cgroups still busy after %s: %s", cgroups.Retry, strings.Join(left, ", "))
	}
	_ = os.RemoveAll(socketDir(abs))
	// Workspaces layered on snapshots are overlay mounts: unmounted, so
	// the state directory can be removed (their files stay in upper/).
	for _, mp := range mountsUnder(abs) {
		_ = unmount(mp)
	}
	// Then the sandboxes' disks they were on (disk_linux.go): the images
	// stay, the next serve mounts them again.
	for _, mp := range diskMountsUnder(abs) {
		_ = detachDisk(mp)
	}
	if err := awaitDisksDetached(abs); err != nil {
		return killed, err
	}
	return killed, nil
}

func mustExecutable() string {
	exe, _ := os.Executable()
	return exe
}
