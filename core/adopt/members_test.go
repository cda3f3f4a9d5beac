package adopt

import (
	"testing"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestToPoolMember(t *testing.T) {
	running, suspended := v1alpha1.OperatingModeRunning, v1alpha1.OperatingModeSuspended
	cases := map[string]struct {
		mode                  v1alpha1.OperatingMode
		phase                 v1alpha1.SandboxPhase
		wantReady, wantFailed bool
	}{
		"no status yet":                         {"", "", false, false},
		"pending":                               {running, v1alpha1.SandboxPending, false, false},
		"running":                               {running, v1alpha1.SandboxRunning, true, false},
		"running, mode unset":                   {"", v1alpha1.SandboxRunning, true, false},
		"failed":                                {running, v1alpha1.SandboxFailed, false, true},
		"suspended (idle policy, an operator)":  {suspended, v1alpha1.SandboxSuspended, false, true},
		"suspend written, status still running": {suspended, v1alpha1.SandboxRunning, false, true},
		"expired":                               {running, v1alpha1.SandboxExpired, false, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := &v1alpha1.Sandbox{Spec: v1alpha1.SandboxSpec{OperatingMode: tc.mode}, Status: v1alpha1.SandboxStatus{Phase: tc.phase}}
			sb.Name = "m"
			got := ToPoolMember(sb)
			if got.Ready != tc.wantReady || got.Failed != tc.wantFailed {
				t.Errorf("ready %v failed %v, want ready %v failed %v", got.Ready, got.Failed, tc.wantReady, tc.wantFailed)
			}
		})
	}
}
