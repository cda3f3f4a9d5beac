package lifecycle

import (
	"testing"
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestLeaseExpiry(t *testing.T) {
	cases := map[string]struct {
		expires  *time.Time
		policy   v1alpha1.ShutdownPolicy
		want     ExpiryAction
		wantWait time.Duration
	}{
		"no lease":          {nil, "", ExpiryNone, 0},
		"renewed, not due":  {at(20 * time.Second), "", ExpiryNone, 20 * time.Second},
		"lapsed: delete":    {at(-time.Second), v1alpha1.ShutdownPolicyDelete, ExpiryDelete, 0},
		"lapsed: retain":    {at(0), v1alpha1.ShutdownPolicyRetain, ExpiryRetain, 0},
		"lapsed: no policy": {at(-time.Hour), "", ExpiryDelete, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, wait := LeaseExpiry(t0, tc.expires, tc.policy)
			if got != tc.want || wait != tc.wantWait {
				t.Errorf("LeaseExpiry = (%v, %v), want (%v, %v)", got, wait, tc.want, tc.wantWait)
			}
		})
	}
}

func TestRenewLease(t *testing.T) {
	lease := 30 * time.Second
	cases := map[string]struct {
		current   *time.Time
		want      time.Time
		wantWrite bool
	}{
		"first lease":                   {nil, t0.Add(lease), true},
		"just renewed: keep":            {at(lease), t0.Add(lease), false},
		"a quarter gone: keep":          {at(lease * 3 / 4), t0.Add(lease * 3 / 4), false},
		"exactly two thirds left: keep": {at(lease * 2 / 3), t0.Add(lease * 2 / 3), false},
		"half gone: write":              {at(lease / 2), t0.Add(lease), true},
		"expired: write":                {at(-time.Second), t0.Add(lease), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, write := RenewLease(t0, tc.current, lease)
			if !got.Equal(tc.want) || write != tc.wantWrite {
				t.Errorf("RenewLease = (%v, %v), want (%v, %v)", got, write, tc.want, tc.wantWrite)
			}
		})
	}
	// Clients renewing every RenewEvery write at most once per lease/3.
	cur := t0.Add(lease)
	writes, last := 0, t0
	for now := t0; now.Before(t0.Add(10 * lease)); now = now.Add(RenewEvery(lease)) {
		next, w := RenewLease(now, &cur, lease)
		if w {
			if writes > 0 && now.Sub(last) < lease/3 {
				t.Fatalf("wrote at %v, %v after the last write", now.Sub(t0), now.Sub(last))
			}
			writes, last = writes+1, now
		}
		cur = next
		if !cur.After(now) {
			t.Fatalf("lease lapsed at %v while renewed", now.Sub(t0))
		}
	}
	if writes == 0 {
		t.Fatal("no write in ten leases")
	}
}

func TestLeaseAfterRestart(t *testing.T) {
	lease := 30 * time.Second
	for name, tc := range map[string]struct{ expires, want time.Time }{
		"lapsed while down: a full lease": {t0.Add(-time.Hour), t0.Add(lease)},
		"nearly out: a full lease":        {t0.Add(time.Second), t0.Add(lease)},
		"later than a lease: kept":        {t0.Add(time.Minute), t0.Add(time.Minute)},
	} {
		if got := LeaseAfterRestart(t0, tc.expires, lease); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
