package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestPause(t *testing.T) {
	cases := []struct {
		phase  v1alpha1.SandboxPhase
		want   PauseDecision
		whyHas string
		reason errinfo.Why // of a refusal
	}{
		{v1alpha1.SandboxRunning, PauseFreeze, "", ""},
		{v1alpha1.SandboxPaused, PauseNothing, "", ""},
		{v1alpha1.SandboxPending, PauseRefuse, "still starting", errinfo.ReasonSandboxInTransition},
		{v1alpha1.SandboxSuspended, PauseRefuse, "resume it first", errinfo.ReasonSandboxSuspended},
		{v1alpha1.SandboxExpired, PauseRefuse, "expired", errinfo.ReasonSandboxExpired},
		{v1alpha1.SandboxFailed, PauseRefuse, "failed", errinfo.ReasonSandboxFailed},
		{v1alpha1.SandboxTerminating, PauseRefuse, "Terminating", errinfo.ReasonSandboxInTransition},
	}
	for _, tc := range cases {
		t.Run(string(tc.phase), func(t *testing.T) {
			got, why := Pause("sb", tc.phase)
			if got != tc.want {
				t.Fatalf("Pause(%s) = %v, want %v", tc.phase, got, tc.want)
			}
			if (why == "") != (tc.whyHas == "") || !strings.Contains(why, tc.whyHas) {
				t.Errorf("Pause(%s) message %q, want one containing %q", tc.phase, why, tc.whyHas)
			}
			if got == PauseRefuse {
				if r := RefusalReason(tc.phase); r != tc.reason {
					t.Errorf("RefusalReason(%s) = %s, want %s", tc.phase, r, tc.reason)
				}
			}
		})
	}
}

func TestRefusalReason(t *testing.T) {
	cases := map[v1alpha1.SandboxPhase]errinfo.Why{
		v1alpha1.SandboxPending:     errinfo.ReasonSandboxInTransition,
		v1alpha1.SandboxRunning:     errinfo.ReasonSandboxInTransition,
		v1alpha1.SandboxSuspended:   errinfo.ReasonSandboxSuspended,
		v1alpha1.SandboxPaused:      errinfo.ReasonSandboxPaused,
		v1alpha1.SandboxExpired:     errinfo.ReasonSandboxExpired,
		v1alpha1.SandboxFailed:      errinfo.ReasonSandboxFailed,
		v1alpha1.SandboxTerminating: errinfo.ReasonSandboxInTransition,
		"":                          errinfo.ReasonSandboxInTransition,
	}
	for phase, want := range cases {
		if got := RefusalReason(phase); got != want {
			t.Errorf("RefusalReason(%q) = %s, want %s", phase, got, want)
		}
	}
}

func TestIdleDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		last     time.Time
		idle     time.Duration
		action   v1alpha1.IdleAction
		want     v1alpha1.IdleAction
		wantWait time.Duration
	}{
		"off":                     {t0.Add(-time.Hour), 0, v1alpha1.IdlePause, "", 0},
		"not yet":                 {t0.Add(-time.Minute), 5 * time.Minute, v1alpha1.IdlePause, "", 4 * time.Minute},
		"due, default suspends":   {t0.Add(-5 * time.Minute), 5 * time.Minute, "", v1alpha1.IdleSuspend, 0},
		"due, suspend":            {t0.Add(-time.Hour), 5 * time.Minute, v1alpha1.IdleSuspend, v1alpha1.IdleSuspend, 0},
		"due, pause":              {t0.Add(-time.Hour), 5 * time.Minute, v1alpha1.IdlePause, v1alpha1.IdlePause, 0},
		"unknown action suspends": {t0.Add(-time.Hour), time.Minute, "Hibernate", v1alpha1.IdleSuspend, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, wait := IdleDue(t0, tc.last, tc.idle, tc.action)
			if got != tc.want || wait != tc.wantWait {
				t.Errorf("IdleDue = (%q, %v), want (%q, %v)", got, wait, tc.want, tc.wantWait)
			}
		})
	}
}
