package sandpod

import (
	"context"
	"errors"
)

// phaseOfReason is the phase a refused exec or file call's Error.Reason
// says the sandbox is in.
var phaseOfReason = map[string]Phase{
	ReasonSandboxPaused: PhasePaused,
	"SANDBOX_SUSPENDED": PhaseSuspended,
	"SANDBOX_EXPIRED":   PhaseExpired,
	"SANDBOX_FAILED":    PhaseFailed,
}

// agentAnswers are the reasons of errors the sandbox's agent answers: a
// call refused with one of them reached a running sandbox.
var agentAnswers = map[string]bool{reasonFileNotFound: true, reasonCodeContextNotFound: true}

// observed is what a handle that last saw the sandbox in phase last learns
// from the outcome err of an exec, file, code or preview call: a refusal
// that names a phase sets it (set); a call that went through (or that the
// agent refused, e.g. a file not found) while the handle saw another phase
// than Running means the server resumed the sandbox (its template
// auto-resumes) or waited for it to start, so the handle fetches its state
// again (refresh). Such answers do not carry the sandbox's state
// themselves.
func observed(last Phase, err error) (phase Phase, set, refresh bool) {
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return last, false, false
		}
		if ph, ok := phaseOfReason[e.Reason]; ok {
			return ph, ph != last, false
		}
		if !agentAnswers[e.Reason] {
			return last, false, false
		}
	}
	return last, false, last != PhaseRunning
}

// observe keeps the handle's Info true after an exec, file, code or
// preview call that ended with err (see observed), and returns err. The
// one extra call (GetSandbox) is made only when the handle last saw the
// sandbox not running.
func (s *Sandbox) observe(ctx context.Context, err error) error {
	phase, set, refresh := observed(s.Info().Phase, err)
	if refresh {
		_, rerr := s.Refresh(ctx)
		if rerr == nil || errors.Is(rerr, ErrNotFound) {
			return err
		}
		// The call that went through shows the sandbox ran when it answered.
		phase, set = PhaseRunning, true
	}
	if set {
		s.mu.Lock()
		s.info.Phase = phase
		s.mu.Unlock()
	}
	return err
}
