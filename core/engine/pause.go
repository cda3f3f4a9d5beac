package engine

import (
	"time"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Pause freezes a running sandbox's processes with their memory
// (the cgroup freezer, freeze_linux.go). The record says Paused before the
// freeze, so an engine that dies in between freezes it on its next start
// (recoverFrozen): the record is the truth, the freezer follows it.
func (e *Engine) Pause(ns, name string) (Sandbox, error) {
	sb, err := e.lookupFor(ns, name, lifecycle.CallPause)
	if err != nil {
		return Sandbox{}, err
	}
	if !e.cg.Usable() {
		return Sandbox{}, failf(ErrConflict, errinfo.ReasonFreezeFailed,
			"pause %q: pausing needs the cgroup freezer, and this server runs with --no-limits (no cgroups); suspend it instead, or restart serve without --no-limits", name)
	}
	e.mu.Lock()
	phase := sb.phase()
	dec, why := lifecycle.Pause(name, phase)
	reason := lifecycle.RefusalReason(phase)
	if dec == lifecycle.PauseFreeze && (sb.busy || sb.proc == nil) {
		dec, why = lifecycle.PauseRefuse, "sandbox \""+name+"\" is being started or stopped; retry"
		reason = errinfo.ReasonSandboxInTransition
	}
	switch dec {
	case lifecycle.PauseRefuse:
		e.mu.Unlock()
		return Sandbox{}, failf(ErrConflict, reason, "%s", why)
	case lifecycle.PauseNothing:
		e.mu.Unlock()
		return e.snapshot(sb), nil
	}
	p := sb.proc
	prev := sb.rec
	next := sb.rec
	next.Mode = v1alpha1.OperatingModePaused
	next.Message = "paused: processes frozen with their memory; resume thaws them"
	if err := e.store.put(&next, "", nil); err != nil {
		e.mu.Unlock()
		return Sandbox{}, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save: %v", err)
	}
	sb.rec = next
	e.mu.Unlock()

	if err := p.freeze(); err != nil {
		e.mu.Lock()
		if sb.rec.Mode == v1alpha1.OperatingModePaused && sb.proc == p {
			sb.rec.Mode, sb.rec.Message = prev.Mode, prev.Message
			if perr := e.store.put(&sb.rec, "", nil); perr != nil {
				e.log.Warn("save sandbox", "sandbox", sb.key(), "err", perr)
			}
		}
		e.mu.Unlock()
		e.publish(sb)
		if err == errGone {
			return Sandbox{}, failf(ErrConflict, errinfo.ReasonSandboxInTransition, "sandbox %q was stopped while it was being paused", name)
		}
		e.log.Error("pause", "sandbox", sb.key(), "err", err)
		return Sandbox{}, failf(ErrInternal, errinfo.ReasonFreezeFailed, "pause %q: %v", name, err)
	}
	e.publish(sb)
	return e.snapshot(sb), nil
}

// resumePaused thaws a paused sandbox (Resume of one whose mode is
// Paused). ok is false when it is not paused (any more): the caller then
// resumes it the usual way.
func (e *Engine) resumePaused(sb *sandbox) (out Sandbox, ok bool, err error) {
	e.mu.Lock()
	if sb.rec.Mode != v1alpha1.OperatingModePaused {
		e.mu.Unlock()
		return Sandbox{}, false, nil
	}
	p := sb.proc
	next := sb.rec
	next.Mode = v1alpha1.OperatingModeRunning
	next.Message = ""
	next.LastActivity = e.now()
	if err := e.store.put(&next, "", nil); err != nil {
		e.mu.Unlock()
		return Sandbox{}, true, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save: %v", err)
	}
	sb.rec = next
	// Its agent was silent while frozen: its health checks start afresh.
	sb.healthFails, sb.lastAnswer = 0, e.now()
	e.mu.Unlock()
	if p == nil {
		// The frozen tree is gone (the agent died while paused and is
		// being restarted): the usual resume waits for the new one.
		return Sandbox{}, false, nil
	}
	if err := p.thaw(); err != nil && err != errGone {
		e.log.Error("thaw", "sandbox", next.key(), "err", err)
		// Kill what cannot be thawed: the restart policy brings up a new
		// agent, rather than leaving a sandbox that says Running and is not.
		go func() { _ = p.kill(10 * time.Second) }()
		return Sandbox{}, true, failf(ErrInternal, errinfo.ReasonFreezeFailed, "resume %q: %v (its processes are being restarted)", next.Name, err)
	}
	e.publish(sb)
	return e.snapshot(sb), true, nil
}

// recoverFrozen makes an adopted process's freezer follow the record after
// a restart of the engine: frozen when it says Paused (the agent cannot
// answer then, so it is not asked), thawed otherwise (an engine that died
// between a thaw's record and the thaw itself). paused says which.
func (e *Engine) recoverFrozen(sb *sandbox) (paused bool, err error) {
	p := sb.proc
	paused = sb.rec.Mode == v1alpha1.OperatingModePaused
	frozen, ferr := p.isFrozen()
	switch {
	case paused && (ferr != nil || !frozen):
		return true, p.freeze()
	case paused:
		p.freezeMu.Lock()
		p.frozen = true
		p.freezeMu.Unlock()
	case frozen:
		return false, p.thaw()
	}
	return paused, nil
}
