package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandpod/sandpod/core/agent"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// A restore in place (issue 16): the sandbox's container, its init and its
// network stay; every other process of it is killed, the workspace is
// swapped under it and the init starts a new agent.
//
// The layout that makes the swap reach the container: a sandbox layered on
// a snapshot starts with /workspace bound from swapBase, a directory of
// the engine's own on the host that is a bind of itself, shared, in a peer
// group of its own. runc makes the container's mounts slaves, so a mount
// the engine makes on swapBase after the container exists propagates into
// it, and nothing propagates back. The engine binds the overlay (the work
// directory) onto swapBase once runc has made the container and before the
// gate opens; a restore unmounts that bind and binds the new overlay. The
// engine only ever mounts on its own host paths (the sandbox's directory
// is 0710 root-owned; the sandbox cannot name, let alone replace, them) and
// never enters the sandbox's mount namespace or resolves a path in it.

// swapBase is the mount point the container's /workspace is bound from
// (see above).
func (e *Engine) swapBase(r *record) string {
	return filepath.Join(sandboxDir(e.cfg.StateDir, r), swapBaseName)
}

const swapBaseName = "wsmount"

// errNoSwap: the restore goes the old way (a new container).
var errNoSwap = errors.New("no restore in place")

// swapRefusal says why a running sandbox cannot be restored in place ("":
// it can). A pure decision: the restore falls back to a new container.
func swapRefusal(started, frozen, freezer, layered, running, rootInside bool) string {
	switch {
	case !running:
		return "not running"
	case rootInside:
		// Root inside may ptrace pasta (its own uid, in its PID namespace
		// but not in the container's cgroup), which the freezer does not
		// reach: only the end of the PID namespace ends it.
		return "its commands run as root inside, which can reach pasta, a process outside the freezer cgroup"
	case !started:
		return "its container was not started by this engine with a swappable workspace"
	case frozen:
		return "paused"
	case !freezer:
		return "no freezer cgroup to stop its processes with"
	case !layered:
		return "workspaces are copies, not overlays"
	}
	return ""
}

// prepareSwapBase makes dir a shared bind of itself in a peer group of its
// own, with nothing mounted on it: what the container's /workspace is bound
// from. Whatever a previous start left on it goes first.
func prepareSwapBase(dir string) error {
	if err := unmountAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dir, err)
	}
	// Private first: a bind inherits the peer group of the mount it came
	// from (the host's); shared again, it is a group of its own.
	for _, flag := range []uintptr{unix.MS_PRIVATE, unix.MS_SHARED} {
		if err := unix.Mount("", dir, "", flag, ""); err != nil {
			_ = unmountAll(dir)
			return fmt.Errorf("propagation of %s: %w", dir, err)
		}
	}
	return nil
}

// attachWorkspace binds the workspace overlay wd onto base; the bind
// propagates into the container. The overlay is nosuid and nodev, and a
// bind copies that.
func attachWorkspace(wd, base string) error {
	if !isOverlayMount(wd) {
		return fmt.Errorf("no overlay mounted on %s", wd)
	}
	if err := unix.Mount(wd, base, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the workspace onto %s: %w", base, err)
	}
	return nil
}

// unmountAll detaches every mount stacked on target.
func unmountAll(target string) error {
	for range 64 {
		err := unix.Unmount(target, unix.MNT_DETACH)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: more than 64 mounts stacked", target)
}

// killAllButInit kills every process of p's container except its init,
// with none escaping: the container is frozen, each process gets a
// SIGKILL, and the thaw lets them die without running any more of their
// own code (a frozen process with a pending SIGKILL dies on its way out of
// the freezer). The freezer also catches what forks while it freezes.
// It returns the PIDs it killed; awaitGone waits until they are gone.
func (p *process) killAllButInit() ([]int, error) {
	p.freezeMu.Lock()
	defer p.freezeMu.Unlock()
	if p.killing || p.frozen {
		return nil, errNoSwap
	}
	f, ok := p.cgroup.Freezer()
	if !ok {
		return nil, errNoSwap
	}
	if err := f.Set(f.FrozenIn, f.FrozenOut); err != nil {
		_ = f.Set(f.ThawedIn, f.ThawedOut)
		return nil, fmt.Errorf("freeze: %w", err)
	}
	others, err := p.others()
	if err == nil {
		for _, pid := range others {
			if kerr := syscall.Kill(pid, syscall.SIGKILL); kerr != nil && kerr != syscall.ESRCH {
				err = fmt.Errorf("kill %d: %w", pid, kerr)
			}
		}
	}
	if terr := f.Set(f.ThawedIn, f.ThawedOut); terr != nil && err == nil {
		err = fmt.Errorf("thaw: %w", terr)
	}
	return others, err
}

// awaitGone waits until none of killed is left in p's container (after
// killAllButInit), or fails after limit. Their PIDs are not reused
// meanwhile but by the kernel's wrap-around, which at worst makes this
// wait its limit.
func (p *process) awaitGone(killed []int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for wait := 200 * time.Microsecond; ; wait = min(wait*2, 5*time.Millisecond) {
		left, err := p.others()
		if err != nil {
			return err
		}
		n := 0
		for _, pid := range left {
			if slices.Contains(killed, pid) {
				n++
			}
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes still there %s after their SIGKILL", n, limit)
		}
		time.Sleep(wait)
	}
}

// others lists the host PIDs of p's container other than its init.
func (p *process) others() ([]int, error) {
	b, err := os.ReadFile(p.cgroup.Procs)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid == p.pid {
			continue
		}
		out = append(out, pid)
	}
	return out, nil
}

// respawnAgent writes one byte of the respawn protocol (agent.RespawnArm,
// agent.RespawnGo) to p's init.
func (p *process) respawnAgent(b byte) error {
	if p.respawn == nil {
		return errNoSwap
	}
	_, err := p.respawn.Write([]byte{b})
	return err
}

// swappable says whether sb can be restored in place now, and the process
// to do it on. Callers hold e.mu.
func (e *Engine) swappableLocked(sb *sandbox) (*process, string) {
	p := sb.proc
	started := p != nil && p.respawn != nil
	frozen := p != nil && p.frozen
	freezer := false
	if p != nil {
		_, freezer = p.cgroup.Freezer()
	}
	uid, _ := sb.rec.Spec.runAs()
	why := swapRefusal(started, frozen, freezer, e.forkMethod == forkOverlay,
		sb.workload == lifecycle.WorkloadReady && !sb.rec.Deleting && sb.rec.Mode == v1alpha1.OperatingModeRunning, uid == 0)
	return p, why
}

// restoreInPlace swaps sb's workspace to its snapshot (already on record)
// under its running container and tells its init to start a new agent
// (finishInPlace waits for it). killed says whether its processes were
// touched: after a failure with killed set, the whole container must go.
func (e *Engine) restoreInPlace(sb *sandbox, p *process) (pids []int, killed bool, err error) {
	e.mu.Lock()
	rec := sb.rec
	e.mu.Unlock()
	base, wd := e.swapBase(&rec), e.workDir(&rec)
	if !isOverlayMount(base) {
		return nil, false, errNoSwap
	}
	if err := p.respawnAgent(agent.RespawnArm); err != nil {
		return nil, false, errNoSwap
	}
	e.mu.Lock()
	sb.workload = lifecycle.WorkloadStarting
	e.mu.Unlock()
	e.publish(sb)
	t0 := time.Now()
	pids, err = p.killAllButInit()
	if err != nil {
		return nil, true, err
	}
	tKill := time.Since(t0)
	// The old workspace goes while the killed processes die: they cannot
	// run any of their own code any more, and the unmount is lazy.
	if err := unix.Unmount(base, unix.MNT_DETACH); err != nil {
		return nil, true, fmt.Errorf("unmount the old workspace: %w", err)
	}
	if err := e.seedWorkspace(sb, nil); err != nil {
		return nil, true, err
	}
	if err := attachWorkspace(wd, base); err != nil {
		return nil, true, err
	}
	tSeed := time.Since(t0) - tKill
	// The init starts the new agent once it has reaped the old one; the
	// other killed processes may still be exiting (they run no code of
	// their own any more): finishInPlace waits for them.
	if err := p.respawnAgent(agent.RespawnGo); err != nil {
		return nil, true, err
	}
	e.log.Info("restore in place", "sandbox", rec.key(), "killed", len(pids), "kill", tKill.Round(time.Microsecond),
		"workspace", tSeed.Round(time.Microsecond))
	return pids, true, nil
}

// finishInPlace waits for the new agent of a restore in place and for the
// killed processes to be gone, and marks the sandbox ready. An agent that does not answer gets the container
// killed: the restart policy takes over, as for any agent that died.
func (e *Engine) finishInPlace(ctx context.Context, sb *sandbox, p *process, killed []int) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.StartTimeout)
	defer cancel()
	t0 := time.Now()
	// The new workspace goes on record while the agent starts, before the
	// restore answers. An engine that dies first finds the record not
	// seeded and seeds again from the snapshot: what it holds anyway, as
	// no caller could have changed it yet.
	saved := make(chan error, 1)
	go func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if sb.proc != p {
			saved <- nil
			return
		}
		saved <- e.store.put(&sb.rec, "", nil)
	}()
	gone := make(chan error, 1)
	go func() { gone <- p.awaitGone(killed, 10*time.Second) }()
	err := e.awaitAgent(ctx, sb, p)
	if serr := <-saved; serr != nil && err == nil {
		err = fmt.Errorf("save the restored sandbox: %w", serr)
	}
	if gerr := <-gone; gerr != nil && err == nil {
		err = gerr
	}
	now := e.now()
	e.log.Info("restore in place: agent back", "sandbox", sb.key(), "took", time.Since(t0).Round(time.Microsecond))
	e.mu.Lock()
	if sb.proc != p {
		e.mu.Unlock()
		return // stopped or restored again meanwhile
	}
	if err != nil {
		sb.killedFor = "the agent did not come back after a restore: " + err.Error()
		e.mu.Unlock()
		e.log.Error("restore in place", "sandbox", sb.key(), "err", err)
		p.sendKill() // watchExit hands it to the restart policy
		return
	}
	sb.workload = lifecycle.WorkloadReady
	sb.healthFails, sb.lastAnswer, sb.killedFor = 0, now, ""
	sb.rec.ReadySince = now // saved with the next change of the record
	e.mu.Unlock()
	e.publish(sb)
}
