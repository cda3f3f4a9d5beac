package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// run starts a sandbox's process tree and waits until its agent answers.
// The caller must not hold e.mu.
func (e *Engine) run(ctx context.Context, sb *sandbox) error { return e.start(ctx, sb, false) }

// awaitStart cancels a start of sb in progress and waits for it to end
// (runc is killed; the rest of a start checks its context or is short).
func (e *Engine) awaitStart(sb *sandbox) {
	for {
		e.mu.Lock()
		busy, cancel := sb.busy, sb.cancelStart
		e.mu.Unlock()
		if !busy {
			return
		}
		if cancel != nil {
			cancel()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// start is run; restart marks a restart of an agent that had died or hung,
// whose failure goes back to the restart policy instead of failing the
// sandbox at once.
func (e *Engine) start(ctx context.Context, sb *sandbox, restart bool) error {
	e.mu.Lock()
	if sb.busy || sb.proc != nil {
		e.mu.Unlock()
		return nil
	}
	sb.busy = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sb.cancelStart = cancel
	sb.workload = lifecycle.WorkloadStarting
	if !restart {
		sb.rec.Message = ""
	}
	rec := sb.rec
	e.mu.Unlock()
	e.publish(sb)

	p, err := e.launch(ctx, &rec)
	if err == nil {
		err = e.awaitAgent(ctx, sb, p)
		if err == nil {
			err = p.networkReady(ctx)
		}
		if err != nil {
			_ = p.kill(10 * time.Second)
			p.release()
		}
	}

	e.mu.Lock()
	sb.busy = false
	sb.cancelStart = nil
	if err != nil {
		if restart && err != errGone {
			e.agentDownLocked(sb, e.now(), "restart failed: "+err.Error(), true)
		} else {
			sb.workload = lifecycle.WorkloadFailed
			sb.rec.Message = "start failed: " + err.Error() + " (see " + e.logPath(&rec) + ")"
		}
		e.mu.Unlock()
		e.log.Error("sandbox start failed", "sandbox", rec.key(), "restart", restart, "err", err)
		e.publish(sb)
		e.poke()
		return err
	}
	now := e.now()
	sb.proc = p
	sb.workload = lifecycle.WorkloadReady
	sb.healthFails, sb.lastAnswer, sb.killedFor = 0, now, ""
	sb.rec.ReadySince = now
	sb.rec.RestartDue = time.Time{}
	if restart {
		sb.rec.Message = "" // the restart summary shows instead
	}
	gone := sb.rec.Deleting || !lifecycle.ShouldRunWorkload(sb.observed())
	if !gone {
		if err := e.store.put(&sb.rec, "", nil); err != nil {
			e.log.Warn("save sandbox", "sandbox", rec.key(), "err", err)
		}
	}
	e.mu.Unlock()
	if gone {
		// Suspended or deleted while starting: stop what was just started.
		e.stop(sb)
		return errGone
	}
	if restart {
		e.log.Info("agent restarted", "sandbox", rec.key(), "restarts", rec.AgentRestarts)
	}
	e.watchExit(sb, p)
	e.publish(sb)
	return nil
}

func (e *Engine) launch(ctx context.Context, rec *record) (*process, error) {
	base, err := e.idBase(rec)
	if err != nil {
		return nil, err
	}
	// Made while the files are prepared; its holder ends once runc has
	// joined it (or the start failed).
	userns := makeUserNS(base)
	defer userns.release()
	uid, gid := rec.Spec.runAs()
	dir := sandboxDir(e.cfg.StateDir, rec)
	if err := e.disks.ensure(dir, rec); err != nil {
		return nil, fmt.Errorf("the sandbox's disk: %w", err)
	}
	if err := privateToSandbox(dir, base); err != nil {
		return nil, err
	}
	if sb := e.sandboxOf(rec); sb != nil {
		if err := e.seedWorkspace(sb, nil); err != nil {
			return nil, fmt.Errorf("workspace from snapshot %q: %w", rec.Snapshot, err)
		}
	}
	wd := e.workDir(rec)
	if err := e.prepareWorkDir(wd, base+uid, base+gid); err != nil {
		return nil, err
	}
	// A workspace layered on a snapshot can be swapped under the running
	// container by a restore (swap_linux.go).
	mountFrom, swapBase := wd, ""
	layered := false
	if sb := e.sandboxOf(rec); sb != nil {
		e.mu.Lock()
		layered = sb.rec.Seeded && sb.rec.Layered
		e.mu.Unlock()
	}
	if layered && isOverlayMount(wd) && e.cg.Usable() {
		swapBase = e.swapBase(rec)
		if err := prepareSwapBase(swapBase); err != nil {
			return nil, fmt.Errorf("workspace mount point: %w", err)
		}
		mountFrom = swapBase
	}
	trees, err := prepareRootFS(filepath.Join(dir, "rootfs"), base, rec.Name, uid, gid, !rec.Spec.NetIsolated, rec.Spec.HostPaths)
	if err != nil {
		return nil, fmt.Errorf("root file system: %w", err)
	}
	c := containerSpec{
		Hostname:   rec.Name,
		RootFS:     filepath.Join(dir, "rootfs"),
		WorkDir:    mountFrom,
		Executable: e.cfg.AgentBinary,
		IDBase:     base,
		RunAsUID:   uid,
		RunAsGID:   gid,
		HostTrees:  trees,
		Env:        sandboxEnv(rec.Spec.Env),
	}
	if len(rec.Spec.Command) > 0 {
		c.AgentArgs = append([]string{"--"}, rec.Spec.Command...)
	}
	id := newContainerID(rec)
	c.CgroupsPath = e.cg.CgroupsPath(id)
	return startProcess(launch{
		ctx:       ctx,
		runc:      e.runc,
		id:        id,
		bundle:    e.bundleDir(rec),
		container: c,
		socket:    e.socketPath(rec),
		logPath:   e.logPath(rec),
		secret:    rec.Secret,
		egress:    !rec.Spec.NetIsolated,
		cgroups:   e.cg,
		limits:    limitsOf(rec.Spec),
		cgroup:    e.containerCgroup(id),
		swapBase:  swapBase,
		workspace: wd,
		userns:    userns,
		setupPID: func(pid int, start uint64) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			sb := e.sandboxes[rec.key()]
			if sb == nil || sb.rec.UID != rec.UID {
				return errGone
			}
			sb.rec.PID, sb.rec.PIDStart, sb.rec.Container = pid, start, id
			return e.store.put(&sb.rec, "", nil)
		},
	})
}

// sandboxOf returns the sandbox of rec, if it is still the same one.
func (e *Engine) sandboxOf(rec *record) *sandbox {
	e.mu.Lock()
	defer e.mu.Unlock()
	if sb := e.sandboxes[rec.key()]; sb != nil && sb.rec.UID == rec.UID {
		return sb
	}
	return nil
}

// idBase returns the sandbox's host id range, choosing one the first time
// it starts: from the host-wide registry (idregistry.go), which records the
// choice at once, so no other engine of the host gives it out. The record
// saves it with the start's PID (launch's setupPID), before any of the
// sandbox runs. An engine that dies before that gets the same range again
// from the registry; what was chowned or mapped to another range is
// handed over again (privateToSandbox, prepareWorkDir, a seed not on
// record).
func (e *Engine) idBase(rec *record) (uint32, error) {
	e.mu.Lock()
	sb := e.sandboxes[rec.key()]
	if sb == nil || sb.rec.UID != rec.UID {
		e.mu.Unlock()
		return 0, errGone
	}
	if sb.rec.IDBase != 0 && !e.moveRange[rec.UID] {
		rec.IDBase = sb.rec.IDBase
		e.mu.Unlock()
		return sb.rec.IDBase, nil
	}
	local := map[uint32]bool{}
	for _, o := range e.sandboxes {
		local[o.rec.IDBase] = true
	}
	e.mu.Unlock()
	// The registry's lock and fsync are not taken under e.mu; only this
	// start of the sandbox chooses its range (sb.busy).
	base, err := e.allocateIDRange(rec, local)
	if err != nil {
		return 0, err
	}
	e.mu.Lock()
	if e.sandboxes[rec.key()] != sb || sb.rec.UID != rec.UID {
		e.mu.Unlock()
		e.releaseIDRange(rec) // deleted meanwhile, perhaps before this range was taken
		return 0, errGone
	}
	sb.rec.IDBase = base
	rec.IDBase = base
	delete(e.moveRange, rec.UID)
	e.mu.Unlock()
	return base, nil
}

// privateToSandbox makes a sandbox's directory on the host passable by its
// own ids only (group: the base of its range; mode 0710): runc enters its
// root file system as that id, and no other host user can reach the
// sandbox's files, or run a set-uid program its root left there.
func privateToSandbox(dir string, base uint32) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil { // the namespace's directory: passable by all sandboxes
		return err
	}
	if err := os.Mkdir(dir, 0o710); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Chown(dir, 0, int(base)); err != nil {
		return err
	}
	return os.Chmod(dir, 0o710)
}

// prepareWorkDir makes the work directory, owned by the sandbox's user on
// the host. One made before sandboxes had id ranges of their own (or for
// another range) is handed over whole, once; nothing of the sandbox runs
// while this happens.
func (e *Engine) prepareWorkDir(wd string, uid, gid uint32) error {
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(wd)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && (st.Uid != uid || st.Gid != gid) {
		if err := chownTree(wd, int(uid), int(gid)); err != nil {
			return fmt.Errorf("hand the work directory to the sandbox's user: %w", err)
		}
	}
	return nil
}

func (e *Engine) logPath(r *record) string {
	return filepath.Join(sandboxDir(e.cfg.StateDir, r), "agent.log")
}

// awaitAgent waits until the agent answers a health call, or p dies.
func (e *Engine) awaitAgent(ctx context.Context, sb *sandbox, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.StartTimeout)
	defer cancel()
	// The watcher gets its own copy of the context: ctx is reassigned below,
	// and a goroutine reading a variable another goroutine writes is a data
	// race (a torn interface value crashed the server under load).
	go func(ctx context.Context) {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}(ctx)
	e.mu.Lock()
	target, secret := "unix://"+e.socketPath(&sb.rec), sb.rec.Secret
	e.mu.Unlock()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	callCtx := metadata.AppendToOutgoingContext(ctx, agentconn.SecretMetadataKey, secret)
	_, err = sandpodv1.NewAgentServiceClient(conn).GetAgentInfo(callCtx, &sandpodv1.GetAgentInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		select {
		case <-p.done:
			return fmt.Errorf("agent %s", p.exit)
		default:
			return fmt.Errorf("agent did not answer: %w", err)
		}
	}
	return nil
}

// watchExit hands the sandbox to the restart policy if its process tree
// dies while it should be running (a crash, the OOM killer, someone's kill
// -9, or the engine's own kill of a hung agent).
func (e *Engine) watchExit(sb *sandbox, p *process) {
	go func() {
		<-p.done
		e.mu.Lock()
		if sb.proc != p {
			e.mu.Unlock()
			return // stopped on purpose
		}
		how := p.exit
		if sb.killedFor != "" {
			how = sb.killedFor
		}
		e.mu.Unlock()
		p.release()
		e.log.Warn("sandbox process tree ended", "sandbox", sb.key(), "how", how)
		e.agentDown(sb, how)
	}()
}

// agentDown records that sb's agent ended (how says why) and applies the
// restart policy: a restart after a back-off (the loop starts it when due),
// or Failed.
func (e *Engine) agentDown(sb *sandbox, how string) {
	e.mu.Lock()
	sb.proc = nil
	e.agentDownLocked(sb, e.now(), how, false)
	e.mu.Unlock()
	e.publish(sb)
	e.poke()
}

// agentDownLocked is agentDown for a caller holding e.mu; it saves the record.
func (e *Engine) agentDownLocked(sb *sandbox, now time.Time, how string, failedStart bool) {
	r := &sb.rec
	var ranFor time.Duration
	if !failedStart && !r.ReadySince.IsZero() {
		ranFor = now.Sub(r.ReadySince)
	}
	policy := e.cfg.AgentRestart
	policy.Policy = sandboxRestartPolicy(policy.Policy, r.RestartOnFailure, r.Spec.RestartOnFailure)
	plan := planRestart(policy, agentDown{
		Wanted: lifecycle.ShouldRunWorkload(sb.observed()), Unclaimed: !r.Claimed, FailedStart: failedStart,
		RanFor: ranFor, Streak: r.RestartStreak, StartFailures: r.StartFailures,
	})
	sb.healthFails, sb.killedFor = 0, ""
	r.PID, r.PIDStart, r.Container = 0, 0, ""
	if r.Mode == v1alpha1.OperatingModePaused {
		// What was frozen is gone with its memory: the sandbox is running
		// again (a new agent, if the policy restarts one), not paused.
		r.Mode = v1alpha1.OperatingModeRunning
		how += " while paused"
	}
	r.RestartStreak, r.StartFailures = plan.Streak, plan.StartFailures
	r.LastAgentExit = &agentExit{Time: now, Reason: how}
	r.RestartDue = time.Time{}
	at := now.UTC().Format(time.RFC3339)
	switch {
	case plan.Restart:
		sb.workload = lifecycle.WorkloadAbsent // PENDING until the new agent answers
		r.RestartDue = now.Add(plan.Delay)
		when := "in " + plan.Delay.String()
		if plan.Delay == 0 {
			when = "now" // the first restart of a streak (lifecycle.RestartBackoff)
		}
		r.Message = fmt.Sprintf("agent %s at %s; restarting it %s (restart %d; see %s)", how, at, when, r.AgentRestarts+1, e.logPath(r))
	case plan.GaveUp:
		sb.workload = lifecycle.WorkloadFailed
		r.Message = fmt.Sprintf("agent could not be restarted (%d restarts in a row failed); last: %s at %s (resume retries; see %s)", plan.StartFailures, how, at, e.logPath(r))
	default:
		sb.workload = lifecycle.WorkloadFailed
		r.Message = "sandbox process tree " + how + " (see " + e.logPath(r) + ")"
	}
	if err := e.store.put(r, "", nil); err != nil {
		e.log.Warn("save sandbox", "sandbox", r.key(), "err", err)
	}
	if plan.Restart {
		e.log.Info("agent restart scheduled", "sandbox", r.key(), "in", plan.Delay, "streak", plan.Streak)
	}
}

// restartAgent starts a new process tree for a sandbox whose restart is
// due, counting the restart.
func (e *Engine) restartAgent(sb *sandbox) {
	e.mu.Lock()
	r := &sb.rec
	if sb.busy || sb.proc != nil || r.RestartDue.IsZero() || !lifecycle.ShouldRunWorkload(sb.observed()) {
		e.mu.Unlock()
		return
	}
	next := sb.rec
	next.RestartDue = time.Time{}
	next.AgentRestarts++
	next.Message = fmt.Sprintf("restarting the agent (restart %d)", next.AgentRestarts)
	if last := next.LastAgentExit; last != nil {
		next.Message += fmt.Sprintf("; last: %s at %s", last.Reason, last.Time.UTC().Format(time.RFC3339))
	}
	if err := e.store.put(&next, "", nil); err != nil {
		e.mu.Unlock()
		e.log.Warn("save sandbox", "sandbox", next.key(), "err", err)
		return // the loop tries again
	}
	sb.rec = next
	e.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.StartTimeout+10*time.Second)
		defer cancel()
		_ = e.start(ctx, sb, true)
	}()
}

// stop kills a sandbox's process tree, keeping its files.
func (e *Engine) stop(sb *sandbox) {
	e.mu.Lock()
	p := sb.proc
	sb.proc = nil
	sb.workload = lifecycle.WorkloadAbsent
	sb.rec.PID, sb.rec.PIDStart, sb.rec.Container = 0, 0, ""
	e.mu.Unlock()
	if p != nil {
		if err := p.kill(10 * time.Second); err != nil {
			e.log.Error("stop sandbox", "sandbox", sb.key(), "err", err)
		}
		p.release()
	}
}

// stopDetached is stop for a restore: it sends the kill and returns at
// once. The old tree dies (the kernel does the teardown: namespaces,
// mounts) while the engine re-seeds the workspace and starts the new one;
// gone closes once it has exited and its runc state and cgroups are gone.
// What the old tree could still reach in those milliseconds is what it
// reached before: its own mounts (the old workspace, set aside by
// seedWorkspace and removed only after gone) and its root file system,
// which the engine rewrites through an os.Root at every start anyway.
func (e *Engine) stopDetached(sb *sandbox) (gone <-chan struct{}) {
	e.mu.Lock()
	p := sb.proc
	sb.proc = nil
	sb.workload = lifecycle.WorkloadAbsent
	sb.rec.PID, sb.rec.PIDStart, sb.rec.Container = 0, 0, ""
	key := sb.key()
	e.mu.Unlock()
	done := make(chan struct{})
	if p == nil {
		close(done)
		return done
	}
	p.sendKill()
	go func() {
		defer close(done)
		if err := p.awaitExit(10 * time.Second); err != nil {
			e.log.Error("stop sandbox", "sandbox", key, "err", err)
		}
		p.release()
	}()
	return done
}

// finishDelete stops a sandbox marked Deleting, removes its files and record.
// A start in progress is canceled and waited for first: its files and
// container must not appear after the delete removed them.
func (e *Engine) finishDelete(sb *sandbox) error {
	e.awaitStart(sb)
	e.stop(sb)
	e.mu.Lock()
	rec := sb.rec
	e.mu.Unlock()
	e.runc.removeAll(containerPrefix(&rec)) // also one adopted after a restart
	_ = os.Remove(e.socketPath(&rec))
	if err := unmountAll(e.swapBase(&rec)); err != nil {
		return fmt.Errorf("unmount the workspace of %s: %w", rec.key(), err)
	}
	if err := unmount(e.workDir(&rec)); err != nil { // a workspace layered on a snapshot
		return fmt.Errorf("unmount the workspace of %s: %w", rec.key(), err)
	}
	if err := e.disks.release(sandboxDir(e.cfg.StateDir, &rec), &rec); err != nil {
		return fmt.Errorf("remove the disk of %s: %w", rec.key(), err)
	}
	_ = os.RemoveAll(e.bundleDir(&rec))
	if err := os.RemoveAll(sandboxDir(e.cfg.StateDir, &rec)); err != nil {
		// A start that seeded its workspace from a snapshot may have mounted
		// it after the unmount above: once more.
		_ = unmountAll(e.swapBase(&rec))
		_ = unmount(e.workDir(&rec))
		if err := os.RemoveAll(sandboxDir(e.cfg.StateDir, &rec)); err != nil {
			return fmt.Errorf("remove files of %s: %w", rec.key(), err)
		}
	}
	e.mu.Lock()
	reqKey := e.requestOfLocked(&rec)
	e.mu.Unlock()
	if err := e.store.delete(rec.key(), reqKey); err != nil {
		return err
	}
	e.releaseIDRange(&rec)
	e.mu.Lock()
	if e.sandboxes[rec.key()] == sb {
		delete(e.sandboxes, rec.key())
	}
	if ent, ok := e.requests[reqKey]; ok && ent.UID == rec.UID {
		delete(e.requests, reqKey)
	}
	e.mu.Unlock()
	e.hub.publish(event{typ: Deleted, sb: e.snapshot(sb)})
	return nil
}
