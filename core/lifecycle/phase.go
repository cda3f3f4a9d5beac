package lifecycle

import (
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// WorkloadState is what a backend observes of a sandbox's workload: the agent
// process tree in the local engine, the pod on Kubernetes.
type WorkloadState int

const (
	// WorkloadAbsent: no process tree or pod exists.
	WorkloadAbsent WorkloadState = iota
	// WorkloadStarting: started, not ready yet.
	WorkloadStarting
	// WorkloadReady: the agent answers.
	WorkloadReady
	// WorkloadFailed: it exited or crashed.
	WorkloadFailed
)

// Observed is a backend-neutral snapshot of one sandbox.
type Observed struct {
	// Deleting is set once deletion has begun.
	Deleting bool
	// Mode is the desired operating mode.
	Mode v1alpha1.OperatingMode
	// Expired is set once the shutdown time passed under policy Retain.
	Expired bool
	// Workload is the observed workload state.
	Workload WorkloadState
}

// Phase derives the phase of a sandbox from what was observed.
func Phase(o Observed) v1alpha1.SandboxPhase {
	switch {
	case o.Deleting:
		return v1alpha1.SandboxTerminating
	case o.Expired:
		return v1alpha1.SandboxExpired
	case o.Mode == v1alpha1.OperatingModeSuspended:
		return v1alpha1.SandboxSuspended
	case o.Mode == v1alpha1.OperatingModePaused && o.Workload == WorkloadReady:
		// Paused only while the frozen workload is there: one that died
		// (or is being replaced) is reported as such, its memory is gone.
		return v1alpha1.SandboxPaused
	case o.Workload == WorkloadFailed:
		return v1alpha1.SandboxFailed
	case o.Workload == WorkloadReady:
		return v1alpha1.SandboxRunning
	default:
		return v1alpha1.SandboxPending
	}
}

// ShouldRunWorkload says whether a sandbox in this state should have a
// running workload: the backend starts one when it is absent. A paused
// sandbox keeps its (frozen) workload.
func ShouldRunWorkload(o Observed) bool {
	return !o.Deleting && !o.Expired && o.Mode != v1alpha1.OperatingModeSuspended
}

// ShouldRestart says whether a failed workload is replaced: only when the
// sandbox asks for it, so a crash loop is reported rather than hidden.
func ShouldRestart(o Observed, restartOnFailure bool) bool {
	return o.Workload == WorkloadFailed && restartOnFailure && ShouldRunWorkload(o)
}
