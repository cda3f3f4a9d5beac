package protoconv

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
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

func TestAgentRefusal(t *testing.T) {
	cases := map[v1alpha1.SandboxPhase]struct {
		reason  errinfo.Why
		msgHas  string // "" : no refusal
		details bool   // names sandbox and namespace in the ErrorInfo
	}{
		v1alpha1.SandboxPaused:      {errinfo.ReasonSandboxPaused, `sandbox "sb" is paused and its template does not auto-resume`, true},
		v1alpha1.SandboxSuspended:   {errinfo.ReasonSandboxSuspended, `sandbox "sb" is suspended and its template does not auto-resume: resume it first`, false},
		v1alpha1.SandboxExpired:     {errinfo.ReasonSandboxExpired, `sandbox "sb" has expired (retained): extend and resume it first`, false},
		v1alpha1.SandboxFailed:      {errinfo.ReasonSandboxFailed, `sandbox "sb" has failed: exit 3`, false},
		v1alpha1.SandboxRunning:     {"", "", false},
		v1alpha1.SandboxPending:     {"", "", false},
		v1alpha1.SandboxTerminating: {"", "", false},
	}
	for phase, tc := range cases {
		t.Run(string(phase), func(t *testing.T) {
			err := AgentRefusal("ns", "sb", phase, "exit 3")
			if tc.msgHas == "" {
				if err != nil {
					t.Fatalf("AgentRefusal(%s) = %v, want none", phase, err)
				}
				return
			}
			st := status.Convert(err)
			if st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), tc.msgHas) {
				t.Fatalf("AgentRefusal(%s) = %v, want FAILED_PRECONDITION with %q", phase, err, tc.msgHas)
			}
			var info *errdetails.ErrorInfo
			for _, d := range st.Details() {
				if i, ok := d.(*errdetails.ErrorInfo); ok {
					info = i
				}
			}
			if info == nil || info.GetReason() != string(tc.reason) {
				t.Fatalf("AgentRefusal(%s) ErrorInfo %v, want reason %s", phase, info, tc.reason)
			}
			if tc.details && (info.GetMetadata()["sandbox"] != "sb" || info.GetMetadata()["namespace"] != "ns") {
				t.Errorf("AgentRefusal(%s) metadata %v", phase, info.GetMetadata())
			}
		})
	}
}
