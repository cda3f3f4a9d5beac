package lifecycle

import (
	"fmt"
	"time"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// PauseDecision is what PauseSandbox does with a sandbox in a phase.
type PauseDecision int

const (
	// PauseRefuse: FAILED_PRECONDITION with the message Pause returns.
	PauseRefuse PauseDecision = iota
	// PauseFreeze: freeze its processes.
	PauseFreeze
	// PauseNothing: already paused; answer as it is.
	PauseNothing
)

// Pause decides what pausing a sandbox in phase does. Only a running
// sandbox has processes to freeze: a pending one is not ready yet (retry
// when it runs), a suspended, expired or failed one has none, a
// terminating one is going.
func Pause(name string, phase v1alpha1.SandboxPhase) (PauseDecision, string) {
	switch phase {
	case v1alpha1.SandboxRunning:
		return PauseFreeze, ""
	case v1alpha1.SandboxPaused:
		return PauseNothing, ""
	case v1alpha1.SandboxPending:
		return PauseRefuse, fmt.Sprintf("sandbox %q is still starting; pause it once it runs", name)
	case v1alpha1.SandboxSuspended:
		return PauseRefuse, fmt.Sprintf("sandbox %q is suspended: it has no processes to pause (resume it first)", name)
	case v1alpha1.SandboxExpired:
		return PauseRefuse, fmt.Sprintf("sandbox %q has expired: it has no processes to pause", name)
	case v1alpha1.SandboxFailed:
		return PauseRefuse, fmt.Sprintf("sandbox %q has failed: it has no processes to pause (resume restarts it)", name)
	}
	return PauseRefuse, fmt.Sprintf("sandbox %q is %s; it cannot be paused", name, phase)
}

// RefusalReason is the ErrorInfo reason of a call refused because its
// sandbox is in phase (a pause Pause refuses, a port call on a sandbox that
// does not run): the sandbox's own state where it has a reason (suspended,
// paused, expired, failed), else SANDBOX_IN_TRANSITION (starting, stopping,
// being deleted). Both backends and the bridge's previews ask here.
func RefusalReason(phase v1alpha1.SandboxPhase) errinfo.Why {
	switch phase {
	case v1alpha1.SandboxSuspended:
		return errinfo.ReasonSandboxSuspended
	case v1alpha1.SandboxPaused:
		return errinfo.ReasonSandboxPaused
	case v1alpha1.SandboxExpired:
		return errinfo.ReasonSandboxExpired
	case v1alpha1.SandboxFailed:
		return errinfo.ReasonSandboxFailed
	}
	return errinfo.ReasonSandboxInTransition
}

// PausedMessage is the message of an exec or file call refused because its
// sandbox is paused.
func PausedMessage(name string) string {
	return fmt.Sprintf("sandbox %q is paused and its template does not auto-resume: resume it first (ResumeSandbox; Python sb.resume(), Go Resume)", name)
}

// IdleDue says what a running sandbox idle since lastActivity gets at now
// (its template's idle action once idleTimeout has passed: Suspend unless
// the action is Pause; "" before that, or when idle timeout is off), and
// otherwise how long until it would (0 when off).
func IdleDue(now, lastActivity time.Time, idleTimeout time.Duration, action v1alpha1.IdleAction) (v1alpha1.IdleAction, time.Duration) {
	due, wait := IdleSuspendDue(now, lastActivity, idleTimeout)
	if !due {
		return "", wait
	}
	if action == v1alpha1.IdlePause {
		return v1alpha1.IdlePause, 0
	}
	return v1alpha1.IdleSuspend, 0
}
