package engine

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// The claim rate is decided by the engine's clock (Config.Clock), not the
// wall clock: a second claim in the same minute is refused with a typed
// quota error, and admitted once the clock has moved past the minute.
func TestClaimRateFollowsTheClock(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	one := int32(1)
	e := &Engine{
		cfg:       Config{Clock: func() time.Time { return at }},
		sandboxes: map[string]*sandbox{},
		pools:     map[string]*pool{},
		claimLog:  map[string][]lifecycle.QuotaClaim{},
		quotas: []v1alpha1.SandboxQuota{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rate"},
			Spec:       v1alpha1.SandboxQuotaSpec{MaxClaimsPerMinute: &one},
		}},
	}
	start := at
	for _, step := range []struct {
		after    time.Duration
		admitted bool
	}{{0, true}, {30 * time.Second, false}, {61 * time.Second, true}} {
		at = start.Add(step.after)
		err := e.admitLocked("default", "plain", 1, true)
		var q *QuotaError
		switch d := step.after; {
		case step.admitted && err != nil:
			t.Fatalf("at +%v: %v, want admitted", d, err)
		case !step.admitted && (!errors.As(err, &q) || !errors.Is(err, ErrExhausted)):
			t.Fatalf("at +%v: %v, want a QuotaError (ErrExhausted)", d, err)
		}
	}
}
