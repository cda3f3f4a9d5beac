package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

func unavailable(what string, err error) error {
	return failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "%s: %v", what, err)
}

// ErrMemorySnapshot refuses a snapshot of processes' memory: the local
// engine snapshots files only.
var ErrMemorySnapshot error = fail(ErrUnsupported, errinfo.ReasonMemorySnapshotUnsupported, nil, "the local engine snapshots files only (the workspace), not the memory of processes: leave include_memory unset")

// SnapshotRequest asks for a snapshot of a sandbox's workspace.
type SnapshotRequest struct {
	Namespace, Sandbox, Name string
	Labels                   map[string]string
	RequestID                string
	IncludeMemory            bool
}

// TakeSnapshot copies a sandbox's workspace into a new snapshot. The
// sandbox keeps running: a file it writes during the copy may be caught
// half-written (suspend it first for a quiet copy).
func (e *Engine) TakeSnapshot(r SnapshotRequest) (SnapshotInfo, error) {
	if r.IncludeMemory {
		return SnapshotInfo{}, ErrMemorySnapshot
	}
	ns := nsOr(r.Namespace)
	s, err := e.takeSnapshot(ns, r.Sandbox, r.Name, r.Labels, r.RequestID, "snapshot")
	if err != nil {
		return SnapshotInfo{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapViewLocked(s), nil
}

// takeSnapshot makes a snapshot of a sandbox (or returns the one an
// earlier request with the same id made).
func (e *Engine) takeSnapshot(ns, source, name string, lbls map[string]string, requestID, op string) (*snapRecord, error) {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	reqKey := ns + "/" + requestID
	e.mu.Lock()
	if requestID != "" {
		if ent, ok := e.requests[reqKey]; ok {
			defer e.mu.Unlock()
			if ent.Op != op {
				return nil, failf(ErrInvalid, errinfo.ReasonRequestIDReused, "request_id %q was already used by a %s request", requestID, ent.Op)
			}
			if s := e.snaps[ns+"/"+ent.Sandbox]; s != nil && s.UID == ent.UID {
				return s, nil
			}
			return nil, failf(ErrNotFound, errinfo.ReasonSnapshotNotFound, "request_id %q made snapshot %q, which has since been deleted", requestID, ent.Sandbox)
		}
	}
	sb := e.sandboxes[ns+"/"+source]
	if sb == nil || sb.rec.Deleting {
		e.mu.Unlock()
		return nil, sandboxNotFound(ns, source)
	}
	if sb.rec.Pool != "" && !sb.rec.Claimed {
		e.mu.Unlock()
		return nil, failf(ErrConflict, errinfo.ReasonUnclaimedPoolMember, "sandbox %q is an unclaimed warm pool member: claim it first", source)
	}
	count := 0
	for _, s := range e.snaps {
		if s.Namespace == ns {
			count++
		}
	}
	if count >= e.limits.MaxPerNamespace {
		e.mu.Unlock()
		return nil, fail(ErrExhausted, errinfo.ReasonSnapshotQuota, map[string]string{"namespace": ns}, fmt.Sprintf("namespace %q holds %d snapshots, the local engine's limit (LocalEngineConfig snapshots.maxPerNamespace): delete some first", ns, count))
	}
	if name == "" {
		name = e.generateSnapName(ns, source)
	} else if _, taken := e.snaps[ns+"/"+name]; taken {
		e.mu.Unlock()
		return nil, failf(ErrExists, errinfo.ReasonSnapshotExists, "snapshot %q already exists in namespace %q", name, ns)
	}
	rec := sb.rec
	e.mu.Unlock()

	// The workspace of a sandbox layered on a snapshot is its overlay,
	// mounted again here if a reboot took it away.
	if err := e.mountIfLayered(&rec); err != nil {
		return nil, failf(ErrInternal, errinfo.ReasonSnapshotCopyFailed, "workspace of %q: %v", source, err)
	}
	uid, _ := rec.Spec.runAs()
	s := &snapRecord{Namespace: ns, Name: name, UID: newUID(), Labels: copyMap(lbls), Source: source, Template: rec.Spec.Template, RunAsUID: uid, Created: e.now()}
	parent := filepath.Join(e.cfg.StateDir, "snapshots", ns)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, failf(ErrInternal, errinfo.ReasonSnapshotCopyFailed, "snapshot directory: %v", err)
	}
	tmp := filepath.Join(parent, ".tmp-"+s.UID)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, failf(ErrInternal, errinfo.ReasonSnapshotCopyFailed, "snapshot directory: %v", err)
	}
	start := time.Now()
	st, err := e.copyWorkspace(&rec, filepath.Join(tmp, "files"))
	if err != nil {
		_ = os.RemoveAll(tmp)
		if errors.Is(err, errCopyLimit) {
			return nil, fail(ErrExhausted, errinfo.ReasonSnapshotQuota, map[string]string{"namespace": ns}, fmt.Sprintf("the workspace of %q is over a snapshot limit (%v; LocalEngineConfig snapshots.maxBytes is %d)", source, err, e.limits.MaxBytes))
		}
		return nil, failf(ErrInternal, errinfo.ReasonSnapshotCopyFailed, "copy the workspace of %q: %v", source, err)
	}
	s.Bytes, s.Entries, s.Skipped, s.Took = st.Bytes, st.Entries, st.Skipped, time.Since(start).Round(time.Millisecond).String()
	s.TakenBy = "copy"
	if st.Reflinked {
		s.TakenBy = "reflink"
	}
	if err := os.Rename(tmp, snapDir(e.cfg.StateDir, ns, name)); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, failf(ErrInternal, errinfo.ReasonSnapshotCopyFailed, "snapshot directory: %v", err)
	}
	var ent *requestEntry
	if requestID != "" {
		ent = &requestEntry{Op: op, Sandbox: name, UID: s.UID}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.store.putSnap(s, reqKey, ent); err != nil {
		_ = os.RemoveAll(snapDir(e.cfg.StateDir, ns, name))
		return nil, unavailable("save snapshot", err)
	}
	e.snaps[s.key()] = s
	if ent != nil {
		e.requests[reqKey] = *ent
	}
	e.log.Info("snapshot taken", "snapshot", s.key(), "sandbox", source, "bytes", s.Bytes, "onDisk", st.Alloc, "entries", s.Entries, "by", s.TakenBy, "took", s.Took)
	e.poke() // a pool may be waiting for it
	return s, nil
}

// copyWorkspace copies a sandbox's workspace to dst, owned by the snapshot
// range; a sandbox that never started has an empty one.
func (e *Engine) copyWorkspace(rec *record, dst string) (*copyStats, error) {
	wd := e.workDir(rec)
	if _, err := os.Lstat(wd); errors.Is(err, os.ErrNotExist) || rec.IDBase == 0 {
		uid, gid := rec.Spec.runAs()
		if err := os.Mkdir(dst, 0o755); err != nil {
			return nil, err
		}
		return &copyStats{}, os.Chown(dst, int(snapshotIDBase+uid), int(snapshotIDBase+gid))
	}
	return copyTree(wd, dst, rec.IDBase, snapshotIDBase, e.limits.MaxBytes)
}

func (e *Engine) generateSnapName(ns, source string) string {
	for {
		b := []byte(newUID()[:6])
		for i := range b {
			b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
		}
		prefix := source
		if len(prefix) > 50 {
			prefix = prefix[:50]
		}
		name := prefix + "-snap-" + string(b)
		if _, taken := e.snaps[ns+"/"+name]; !taken {
			return name
		}
	}
}

// ForkRequest asks for Count sandboxes from a snapshot, or from a sandbox
// through an implicit snapshot of it.
type ForkRequest struct {
	Namespace, Sandbox, Snapshot, Template string
	Count                                  int
	Labels, Env                            map[string]string
	TTL                                    time.Duration
	ShutdownPolicy                         v1alpha1.ShutdownPolicy
	RequestID                              string
	NoWait                                 bool
}

// Fork makes count sandboxes from a snapshot, or from a sandbox
// through an implicit snapshot of it. Sandbox i of a request id is recorded
// under "<id>#<i>", so a retry finds every one it made and makes none more.
func (e *Engine) Fork(ctx context.Context, req ForkRequest) ([]Sandbox, SnapshotInfo, error) {
	ns := nsOr(req.Namespace)
	rid := req.RequestID
	snapName := req.Snapshot
	if req.Sandbox != "" {
		srid := ""
		if rid != "" {
			srid = rid + "#snapshot"
		}
		s, err := e.takeSnapshot(ns, req.Sandbox, "", map[string]string{v1alpha1.LabelForkOf: req.Sandbox}, srid, "fork-snapshot")
		if err != nil {
			return nil, SnapshotInfo{}, err
		}
		snapName = s.Name
	}
	p := newParams{
		namespace: ns, template: req.Template, labels: req.Labels, env: req.Env,
		ttl: req.TTL, policy: req.ShutdownPolicy, op: "fork", snapshot: snapName,
	}
	// Ready members of a warm pool made from the snapshot first (as a
	// claim takes them), then new sandboxes for the rest. Sandbox i keeps
	// its request id either way, so a retry finds each one again.
	n := req.Count
	if err := e.admitFork(p, n, rid); err != nil {
		return nil, SnapshotInfo{}, err
	}
	sbs := make([]*sandbox, n)
	var cold []int
	for i := range n {
		q := p
		if rid != "" {
			q.requestID = rid + "#" + strconv.Itoa(i)
		}
		sb, _, ok, err := e.adoptWarm(q)
		if err != nil {
			return nil, SnapshotInfo{}, err
		}
		if ok {
			sbs[i] = sb
		} else {
			cold = append(cold, i)
		}
	}
	made, fresh, err := e.newForks(p, cold, rid)
	if err != nil {
		return nil, SnapshotInfo{}, err
	}
	for j, i := range cold {
		sbs[i] = made[j]
	}
	for _, sb := range fresh {
		e.startAsync(sb)
	}
	out := make([]Sandbox, len(sbs))
	for i, sb := range sbs {
		if req.NoWait {
			out[i] = e.snapshot(sb)
			continue
		}
		if out[i], err = e.waitReady(ctx, sb); err != nil {
			return nil, SnapshotInfo{}, err
		}
	}
	snap, err := e.Snapshot(ns, snapName)
	if err != nil {
		return nil, SnapshotInfo{}, err
	}
	return out, snap, nil
}

// newForks records the sandboxes of the given indexes of a fork, made from
// p.snapshot, in one store write, reusing those an earlier request with the
// same id made. fresh are the new ones, to start.
func (e *Engine) newForks(p newParams, idx []int, rid string) (all, fresh []*sandbox, err error) {
	if len(idx) == 0 {
		return nil, nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.snapForLocked(&p)
	if err != nil {
		return nil, nil, err
	}
	spec, ok := e.templates[p.namespace+"/"+p.template]
	if !ok {
		return nil, nil, e.noTemplate(p.namespace, p.template)
	}
	var recs []*record
	reqs := map[string]requestEntry{}
	slots := make([]*sandbox, len(idx))
	for j, i := range idx {
		if rid != "" {
			q := p
			q.requestID = rid + "#" + strconv.Itoa(i)
			if prev, found, err := e.byRequest(q); found {
				if err != nil {
					return nil, nil, err
				}
				slots[j] = prev
				continue
			}
		}
		rec := e.newRecordLocked(p, spec, e.generateName(p.namespace, p.template))
		rec.SnapshotUID = s.UID
		if rid != "" {
			rec.RequestID = rid + "#" + strconv.Itoa(i)
			reqs[p.namespace+"/"+rec.RequestID] = requestEntry{Op: p.op, Sandbox: rec.Name, UID: rec.UID}
		}
		recs = append(recs, &rec)
		sb := makeSandbox(rec)
		slots[j] = sb
		e.sandboxes[rec.key()] = sb // reserves the name for the next generateName
		fresh = append(fresh, sb)
	}
	if err := e.store.putMany(recs, reqs); err != nil {
		for _, sb := range fresh {
			delete(e.sandboxes, sb.key())
		}
		return nil, nil, unavailable("save sandboxes", err)
	}
	for k, v := range reqs {
		e.requests[k] = v
	}
	for _, sb := range fresh {
		go e.hub.publish(event{typ: Added, sb: sb.view()})
	}
	return slots, fresh, nil
}

// snapForLocked finds p's snapshot and fills in its template when p names
// none. Callers hold e.mu.
func (e *Engine) snapForLocked(p *newParams) (*snapRecord, error) {
	s := e.snaps[p.namespace+"/"+p.snapshot]
	if s == nil {
		return nil, snapshotNotFound(p.namespace, p.snapshot)
	}
	if s.Message != "" {
		return nil, failf(ErrConflict, errinfo.ReasonSnapshotNotReady, "snapshot %q cannot be used: %s", s.Name, s.Message)
	}
	if p.template == "" {
		p.template = s.Template
	}
	return s, nil
}

// Restore puts a sandbox's workspace back to a snapshot. Its
// processes are stopped and, unless it is suspended, it starts again on
// the snapshot's files; name, identity, labels, env and shutdown time stay.
func (e *Engine) Restore(ctx context.Context, ns, name, snapshot string, noWait bool) (Sandbox, error) {
	ns = nsOr(ns)
	sb, err := e.lookupFor(ns, name, lifecycle.CallSuspend) // what may stop it may restore it
	if err != nil {
		return Sandbox{}, err
	}
	e.snapMu.Lock()
	e.mu.Lock()
	s := e.snaps[ns+"/"+snapshot]
	switch {
	case s == nil:
		e.mu.Unlock()
		e.snapMu.Unlock()
		return Sandbox{}, snapshotNotFound(ns, snapshot)
	case s.Message != "":
		e.mu.Unlock()
		e.snapMu.Unlock()
		return Sandbox{}, failf(ErrConflict, errinfo.ReasonSnapshotNotReady, "snapshot %q cannot be used: %s", s.Name, s.Message)
	case sb.busy:
		e.mu.Unlock()
		e.snapMu.Unlock()
		return Sandbox{}, failf(ErrUnavailable, errinfo.ReasonSandboxNotReady, "sandbox %q is starting or stopping; retry in a moment", name)
	case sb.rec.Expired:
		e.mu.Unlock()
		e.snapMu.Unlock()
		return Sandbox{}, failf(ErrConflict, errinfo.ReasonSandboxExpired, "sandbox %q has expired; extend it first", name)
	}
	sb.busy = true // no start while its files change
	next := sb.rec
	next.Snapshot, next.SnapshotUID, next.Seeded, next.Layered = s.Name, s.UID, false, false
	err = e.store.put(&next, "", nil)
	if err == nil {
		sb.rec = next
	}
	e.mu.Unlock()
	var stopped, seeded time.Duration
	inPlace := false
	var inPlaceProc *process
	var inPlacePIDs []int
	if err == nil {
		// Keep the container, swap the workspace under it (swap_linux.go).
		e.mu.Lock()
		p, why := e.swappableLocked(sb)
		e.mu.Unlock()
		if why == "" {
			t0 := time.Now()
			pids, killed, serr := e.restoreInPlace(sb, p)
			switch {
			case serr == nil:
				inPlace, inPlaceProc, inPlacePIDs = true, p, pids
				seeded = time.Since(t0)
			case killed:
				e.log.Warn("restore in place failed; starting a new container", "sandbox", sb.key(), "err", serr)
			case serr != errNoSwap:
				e.log.Warn("restore in place refused; starting a new container", "sandbox", sb.key(), "err", serr)
			}
		}
	}
	if err == nil && !inPlace {
		// The old processes die while the workspace is made again and the
		// new ones start; their files go once they are gone.
		t0 := time.Now()
		gone := e.stopDetached(sb)
		stopped = time.Since(t0)
		err = e.seedWorkspace(sb, gone)
		seeded = time.Since(t0) - stopped
	}
	e.snapMu.Unlock()
	e.mu.Lock()
	sb.busy = false
	run := sb.rec.Mode == v1alpha1.OperatingModeRunning && !sb.rec.Deleting
	e.mu.Unlock()
	if err != nil {
		e.poke()
		return Sandbox{}, failf(ErrInternal, errinfo.ReasonSnapshotCopyFailed, "restore %q to %q: %v", name, snapshot, err)
	}
	e.log.Info("sandbox restored", "sandbox", sb.key(), "snapshot", s.Name, "in_place", inPlace, "stop", stopped.Round(time.Microsecond), "files", seeded.Round(time.Microsecond))
	if inPlace {
		if noWait {
			go e.finishInPlace(context.WithoutCancel(ctx), sb, inPlaceProc, inPlacePIDs)
			return e.snapshot(sb), nil
		}
		e.finishInPlace(ctx, sb, inPlaceProc, inPlacePIDs)
		return e.waitReady(ctx, sb)
	}
	if !run {
		e.publish(sb)
		return e.snapshot(sb), nil
	}
	e.startAsync(sb)
	if noWait {
		return e.snapshot(sb), nil
	}
	return e.waitReady(ctx, sb)
}

// upperDirs are the sandbox's own layer and overlayfs's work directory.
func (e *Engine) upperDirs(rec *record) (upper, work string) {
	dir := sandboxDir(e.cfg.StateDir, rec)
	return filepath.Join(dir, "upper"), filepath.Join(dir, "ovl")
}

// seedWorkspace makes a sandbox's workspace from its snapshot, once (a
// seed that did not finish starts over): an overlay over the snapshot's
// files, or a copy; either way owned by the sandbox's own id range. Nothing
// of the sandbox may run meanwhile but an old process tree that is dying
// (oldGone closes when it is gone; nil: there is none): the old workspace
// is set aside, out of the new one's way, and removed after oldGone.
func (e *Engine) seedWorkspace(sb *sandbox, oldGone <-chan struct{}) error {
	e.mu.Lock()
	rec := sb.rec
	e.mu.Unlock()
	if rec.Snapshot == "" || rec.Seeded {
		return e.mountIfLayered(&rec)
	}
	base, err := e.idBase(&rec)
	if err != nil {
		return err
	}
	if err := e.disks.ensure(sandboxDir(e.cfg.StateDir, &rec), &rec); err != nil {
		return fmt.Errorf("the sandbox's disk: %w", err)
	}
	if err := privateToSandbox(sandboxDir(e.cfg.StateDir, &rec), base); err != nil {
		return err
	}
	wd := e.workDir(&rec)
	upper, work := e.upperDirs(&rec)
	if err := unmount(wd); err != nil {
		return err
	}
	if err := e.setAside(sandboxDir(e.cfg.StateDir, &rec), oldGone, wd, upper, work); err != nil {
		return err
	}
	lower := snapFiles(e.cfg.StateDir, rec.Namespace, rec.Snapshot)
	layered := e.forkMethod == forkOverlay
	if layered {
		if _, err := mountLayered(wd, lower, upper, work, base); err != nil {
			return fmt.Errorf("mount the workspace over snapshot %q: %w", rec.Snapshot, err)
		}
	} else if _, err := copyTree(lower, wd, snapshotIDBase, base, 0); err != nil {
		return fmt.Errorf("copy snapshot %q: %w", rec.Snapshot, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sandboxes[rec.key()] != sb || sb.rec.Deleting || sb.rec.Snapshot != rec.Snapshot {
		// Deleted (or restored elsewhere) meanwhile: leave no mount behind
		// for the delete to trip over.
		_ = unmount(wd)
		return errGone
	}
	if layered {
		// Saved with the start's PID (launch's setupPID), before any of
		// the sandbox runs: an engine that dies first seeds again, and
		// meanwhile the record (not seeded) keeps the snapshot from being
		// deleted. One store commit fewer per fork and restore.
		sb.rec.Seeded, sb.rec.Layered = true, true
		return nil
	}
	// A copy no longer needs the snapshot, which may then be deleted: on
	// record at once, or a restarted engine would seed from nothing.
	next := sb.rec
	next.Seeded, next.Layered = true, false
	if err := e.store.put(&next, "", nil); err != nil {
		return err
	}
	sb.rec = next
	return nil
}

// mountIfLayered mounts the overlay of a sandbox layered on a snapshot if
// it is not mounted (after a reboot).
func (e *Engine) mountIfLayered(rec *record) error {
	if !rec.Layered || !rec.Seeded {
		return nil
	}
	wd := e.workDir(rec)
	if isOverlayMount(wd) {
		return nil
	}
	upper, work := e.upperDirs(rec)
	_, err := mountLayered(wd, snapFiles(e.cfg.StateDir, rec.Namespace, rec.Snapshot), upper, work, rec.IDBase)
	return err
}

// admitFork checks the quotas for the sandboxes of a fork that its request
// id has not made yet, all at once (so a fork is not cut half way), and
// counts them as handed out.
func (e *Engine) admitFork(p newParams, n int, rid string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.snapForLocked(&p); err != nil {
		return err
	}
	fresh := n
	if rid != "" {
		for i := range n {
			q := p
			q.requestID = rid + "#" + strconv.Itoa(i)
			if _, found, _ := e.byRequest(q); found {
				fresh--
			}
		}
	}
	return e.admitLocked(p.namespace, p.template, fresh, true)
}

// setAside moves dirs (in dir) out of the way into dir/trash and removes
// them in the background once oldGone closes (at once when nil): a restore
// then pays two renames instead of removing a workspace, and files a dying
// old process may still hold are removed only after it is gone. A trash
// left by an engine that stopped meanwhile goes with the sandbox's files.
func (e *Engine) setAside(dir string, oldGone <-chan struct{}, dirs ...string) error {
	var some bool
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			some = true
		}
	}
	if !some { // a first seed
		return nil
	}
	trash := filepath.Join(dir, "trash")
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return err
	}
	bin, err := os.MkdirTemp(trash, "old-")
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.Rename(d, filepath.Join(bin, filepath.Base(d))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	go func() {
		if oldGone != nil {
			<-oldGone
		}
		if err := os.RemoveAll(bin); err != nil {
			e.log.Warn("remove an old workspace", "dir", bin, "err", err)
		}
	}()
	return nil
}
