package engine

import (
	"github.com/sandpod/sandpod/core/lifecycle"
)

// callTarget is the sandbox as lifecycle.MayReach sees it: an unclaimed
// warm pool member names its pool.
func (s *sandbox) callTarget() lifecycle.CallTarget {
	t := lifecycle.CallTarget{Name: s.rec.Name, Template: s.rec.Spec.Template}
	if s.rec.Pool != "" && !s.rec.Claimed {
		t.Pool = s.rec.Pool
	}
	return t
}

// reach is nil when call may act on s, else the FAILED_PRECONDITION that
// says why not (an unclaimed pool member: see lifecycle.MayReach). A claim
// never comes undone, so a call let through stays allowed. Callers hold e.mu.
func (s *sandbox) reach(call lifecycle.SandboxCall) error {
	t := s.callTarget()
	if ok, why := lifecycle.MayReach(call, t); !ok {
		return &RefusalError{Target: t, Why: why}
	}
	return nil
}

// lookupFor is lookup for a call that acts on the sandbox: NOT_FOUND, or
// FAILED_PRECONDITION when the call may not reach it.
func (e *Engine) lookupFor(ns, name string, call lifecycle.SandboxCall) (*sandbox, error) {
	sb, err := e.lookup(ns, name)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := sb.reach(call); err != nil {
		return nil, err
	}
	return sb, nil
}
