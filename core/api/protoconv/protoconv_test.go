package protoconv

import (
	"testing"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestPhaseFromProto(t *testing.T) {
	cases := map[sandpodv1.Phase]v1alpha1.SandboxPhase{
		sandpodv1.Phase_PHASE_UNSPECIFIED: v1alpha1.SandboxPending,
		sandpodv1.Phase_PHASE_PENDING:     v1alpha1.SandboxPending,
		sandpodv1.Phase_PHASE_RUNNING:     v1alpha1.SandboxRunning,
		sandpodv1.Phase_PHASE_SUSPENDED:   v1alpha1.SandboxSuspended,
		sandpodv1.Phase_PHASE_PAUSED:      v1alpha1.SandboxPaused,
		sandpodv1.Phase_PHASE_EXPIRED:     v1alpha1.SandboxExpired,
		sandpodv1.Phase_PHASE_FAILED:      v1alpha1.SandboxFailed,
		sandpodv1.Phase_PHASE_TERMINATING: v1alpha1.SandboxTerminating,
	}
	for wire, want := range cases {
		if got := PhaseFromProto(wire); got != want {
			t.Errorf("PhaseFromProto(%s) = %q, want %q", wire, got, want)
		}
		if want != v1alpha1.SandboxPending || wire == sandpodv1.Phase_PHASE_PENDING {
			if back := Phase(want); back != wire {
				t.Errorf("Phase(PhaseFromProto(%s)) = %s", wire, back)
			}
		}
	}
}
