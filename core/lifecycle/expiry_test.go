package lifecycle

import (
	"testing"
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

func TestDecideExpiry(t *testing.T) {
	cases := map[string]struct {
		shutdown   *time.Time
		policy     v1alpha1.ShutdownPolicy
		wantAction ExpiryAction
		wantWait   time.Duration
	}{
		"no shutdown time":         {nil, v1alpha1.ShutdownPolicyDelete, ExpiryNone, 0},
		"zero shutdown time":       {&time.Time{}, v1alpha1.ShutdownPolicyDelete, ExpiryNone, 0},
		"in the future":            {at(90 * time.Second), v1alpha1.ShutdownPolicyDelete, ExpiryNone, 90 * time.Second},
		"due now, delete":          {at(0), v1alpha1.ShutdownPolicyDelete, ExpiryDelete, 0},
		"past, retain":             {at(-time.Hour), v1alpha1.ShutdownPolicyRetain, ExpiryRetain, 0},
		"past, empty policy":       {at(-time.Second), "", ExpiryDelete, 0},
		"future, retain waits too": {at(time.Minute), v1alpha1.ShutdownPolicyRetain, ExpiryNone, time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			action, wait := DecideExpiry(t0, tc.shutdown, tc.policy)
			if action != tc.wantAction || wait != tc.wantWait {
				t.Errorf("DecideExpiry = (%v, %v), want (%v, %v)", action, wait, tc.wantAction, tc.wantWait)
			}
		})
	}
}

func TestIdleSuspendDue(t *testing.T) {
	cases := map[string]struct {
		last     time.Time
		idle     time.Duration
		wantDue  bool
		wantWait time.Duration
	}{
		"off":           {t0.Add(-time.Hour), 0, false, 0},
		"not yet":       {t0.Add(-time.Minute), 5 * time.Minute, false, 4 * time.Minute},
		"exactly due":   {t0.Add(-5 * time.Minute), 5 * time.Minute, true, 0},
		"long overdue":  {t0.Add(-time.Hour), time.Minute, true, 0},
		"negative idle": {t0, -time.Second, false, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			due, wait := IdleSuspendDue(t0, tc.last, tc.idle)
			if due != tc.wantDue || wait != tc.wantWait {
				t.Errorf("IdleSuspendDue = (%v, %v), want (%v, %v)", due, wait, tc.wantDue, tc.wantWait)
			}
		})
	}
}

func TestShutdownTime(t *testing.T) {
	cases := map[string]struct {
		explicit    *time.Time
		ttl, defTTL time.Duration
		want        *time.Time
	}{
		"nothing":               {nil, 0, 0, nil},
		"template default":      {nil, 0, time.Hour, at(time.Hour)},
		"ttl beats default":     {nil, time.Minute, time.Hour, at(time.Minute)},
		"explicit beats ttl":    {at(3 * time.Hour), time.Minute, time.Hour, at(3 * time.Hour)},
		"zero explicit ignored": {&time.Time{}, time.Minute, 0, at(time.Minute)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ShutdownTime(t0, tc.explicit, tc.ttl, tc.defTTL)
			if (got == nil) != (tc.want == nil) || (got != nil && !got.Equal(*tc.want)) {
				t.Errorf("ShutdownTime = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEffectivePolicyAndNextWakeup(t *testing.T) {
	if got := EffectivePolicy("", ""); got != v1alpha1.ShutdownPolicyDelete {
		t.Errorf("default policy = %s", got)
	}
	if got := EffectivePolicy("", v1alpha1.ShutdownPolicyRetain); got != v1alpha1.ShutdownPolicyRetain {
		t.Errorf("template policy = %s", got)
	}
	if got := EffectivePolicy(v1alpha1.ShutdownPolicyDelete, v1alpha1.ShutdownPolicyRetain); got != v1alpha1.ShutdownPolicyDelete {
		t.Errorf("requested policy = %s", got)
	}
	if got := NextWakeup(0, 3*time.Second, -time.Second, time.Second); got != time.Second {
		t.Errorf("NextWakeup = %v, want 1s", got)
	}
	if got := NextWakeup(0, -1); got != 0 {
		t.Errorf("NextWakeup of nothing = %v, want 0", got)
	}
}
