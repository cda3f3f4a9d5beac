// Package protoconv maps the API's enums (core/api/v1alpha1) to the wire
// contract's (proto/sandpod/v1) and back, so the local engine and the
// Kubernetes backend report the same values.
package protoconv

import (
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

var phases = map[v1alpha1.SandboxPhase]sandpodv1.Phase{
	v1alpha1.SandboxPending:     sandpodv1.Phase_PHASE_PENDING,
	v1alpha1.SandboxRunning:     sandpodv1.Phase_PHASE_RUNNING,
	v1alpha1.SandboxSuspended:   sandpodv1.Phase_PHASE_SUSPENDED,
	v1alpha1.SandboxPaused:      sandpodv1.Phase_PHASE_PAUSED,
	v1alpha1.SandboxExpired:     sandpodv1.Phase_PHASE_EXPIRED,
	v1alpha1.SandboxFailed:      sandpodv1.Phase_PHASE_FAILED,
	v1alpha1.SandboxTerminating: sandpodv1.Phase_PHASE_TERMINATING,
}

// Phase is the wire phase of p; a phase not yet computed is Pending.
func Phase(p v1alpha1.SandboxPhase) sandpodv1.Phase {
	if w, ok := phases[p]; ok {
		return w
	}
	return sandpodv1.Phase_PHASE_PENDING
}

// PhaseFromProto is the API phase of a wire phase; an unspecified one is
// Pending, as Phase reports a phase not yet computed.
func PhaseFromProto(p sandpodv1.Phase) v1alpha1.SandboxPhase {
	for k, w := range phases {
		if w == p {
			return k
		}
	}
	return v1alpha1.SandboxPending
}

// Policy is the wire value of an effective shutdown policy.
func Policy(p v1alpha1.ShutdownPolicy) sandpodv1.ShutdownPolicy {
	switch p {
	case v1alpha1.ShutdownPolicyDelete:
		return sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_DELETE
	case v1alpha1.ShutdownPolicyRetain:
		return sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_RETAIN
	}
	return sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_UNSPECIFIED
}

// PolicyFromProto maps the wire enum to the API value ("" when unspecified).
func PolicyFromProto(p sandpodv1.ShutdownPolicy) v1alpha1.ShutdownPolicy {
	switch p {
	case sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_DELETE:
		return v1alpha1.ShutdownPolicyDelete
	case sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_RETAIN:
		return v1alpha1.ShutdownPolicyRetain
	}
	return ""
}

// IdleAction is the wire value of a template's idle action.
func IdleAction(a v1alpha1.IdleAction) sandpodv1.IdleAction {
	switch a {
	case v1alpha1.IdleSuspend:
		return sandpodv1.IdleAction_IDLE_ACTION_SUSPEND
	case v1alpha1.IdlePause:
		return sandpodv1.IdleAction_IDLE_ACTION_PAUSE
	}
	return sandpodv1.IdleAction_IDLE_ACTION_UNSPECIFIED
}
