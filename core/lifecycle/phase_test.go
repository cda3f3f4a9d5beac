package lifecycle

import (
	"testing"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestPhase(t *testing.T) {
	running, suspended, paused := v1alpha1.OperatingModeRunning, v1alpha1.OperatingModeSuspended, v1alpha1.OperatingModePaused
	cases := map[string]struct {
		in   Observed
		want v1alpha1.SandboxPhase
	}{
		"no workload yet":           {Observed{Mode: running}, v1alpha1.SandboxPending},
		"starting":                  {Observed{Mode: running, Workload: WorkloadStarting}, v1alpha1.SandboxPending},
		"ready":                     {Observed{Mode: running, Workload: WorkloadReady}, v1alpha1.SandboxRunning},
		"empty mode means running":  {Observed{Workload: WorkloadReady}, v1alpha1.SandboxRunning},
		"failed":                    {Observed{Mode: running, Workload: WorkloadFailed}, v1alpha1.SandboxFailed},
		"suspended beats workload":  {Observed{Mode: suspended, Workload: WorkloadReady}, v1alpha1.SandboxSuspended},
		"expired beats suspended":   {Observed{Mode: suspended, Expired: true}, v1alpha1.SandboxExpired},
		"deleting beats everything": {Observed{Deleting: true, Expired: true, Workload: WorkloadReady}, v1alpha1.SandboxTerminating},
		"paused":                    {Observed{Mode: paused, Workload: WorkloadReady}, v1alpha1.SandboxPaused},
		"paused, workload died":     {Observed{Mode: paused, Workload: WorkloadFailed}, v1alpha1.SandboxFailed},
		"paused, being restarted":   {Observed{Mode: paused, Workload: WorkloadStarting}, v1alpha1.SandboxPending},
		"expired beats paused":      {Observed{Mode: paused, Expired: true, Workload: WorkloadReady}, v1alpha1.SandboxExpired},
		"deleting beats paused":     {Observed{Mode: paused, Deleting: true, Workload: WorkloadReady}, v1alpha1.SandboxTerminating},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Phase(tc.in); got != tc.want {
				t.Errorf("Phase(%+v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestShouldRunAndRestart(t *testing.T) {
	cases := map[string]struct {
		in          Observed
		restart     bool
		wantRun     bool
		wantRestart bool
	}{
		"running":                {Observed{Mode: v1alpha1.OperatingModeRunning}, false, true, false},
		"suspended":              {Observed{Mode: v1alpha1.OperatingModeSuspended}, true, false, false},
		"paused keeps workload":  {Observed{Mode: v1alpha1.OperatingModePaused, Workload: WorkloadReady}, true, true, false},
		"expired":                {Observed{Expired: true, Workload: WorkloadFailed}, true, false, false},
		"deleting":               {Observed{Deleting: true}, false, false, false},
		"failed, no restart":     {Observed{Workload: WorkloadFailed}, false, true, false},
		"failed, restart policy": {Observed{Workload: WorkloadFailed}, true, true, true},
		"failed while paused":    {Observed{Mode: v1alpha1.OperatingModePaused, Workload: WorkloadFailed}, true, true, true},
		"failed while suspended": {Observed{Mode: v1alpha1.OperatingModeSuspended, Workload: WorkloadFailed}, true, false, false},
		"ready, restart policy":  {Observed{Workload: WorkloadReady}, true, true, false},
		"starting, restart":      {Observed{Workload: WorkloadStarting}, true, true, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ShouldRunWorkload(tc.in); got != tc.wantRun {
				t.Errorf("ShouldRunWorkload = %v, want %v", got, tc.wantRun)
			}
			if got := ShouldRestart(tc.in, tc.restart); got != tc.wantRestart {
				t.Errorf("ShouldRestart = %v, want %v", got, tc.wantRestart)
			}
		})
	}
}

func TestRestartOnFailureOverride(t *testing.T) {
	yes, no := true, false
	cases := map[string]struct {
		req  *bool
		tmpl bool
		want bool
	}{
		"unset keeps template off": {nil, false, false},
		"unset keeps template on":  {nil, true, true},
		"request turns it on":      {&yes, false, true},
		"request turns it off":     {&no, true, false},
		"request agrees":           {&yes, true, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := RestartOnFailure(tc.req, tc.tmpl); got != tc.want {
				t.Errorf("RestartOnFailure(%v, %v) = %v, want %v", tc.req, tc.tmpl, got, tc.want)
			}
		})
	}
}
