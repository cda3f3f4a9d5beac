package lifecycle

import (
	"testing"
	"time"
)

func TestRefillDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := time.Second
	cases := map[string]struct {
		delay, lastClaim, now time.Duration // after the deficit was first seen
		low                   bool
		want                  bool
		wantWait              time.Duration
	}{
		"no delay":                             {want: true},
		"deficit just seen":                    {delay: s, wantWait: s},
		"part of the delay":                    {delay: s, now: 300 * time.Millisecond, wantWait: 700 * time.Millisecond},
		"delay passed with no claim":           {delay: s, now: s, want: true},
		"a claim restarts the delay":           {delay: s, lastClaim: 2 * s, now: 2500 * time.Millisecond, wantWait: 500 * time.Millisecond},
		"claims paused for the delay":          {delay: s, lastClaim: 2 * s, now: 3 * s, want: true},
		"claims never pause: bounded wait":     {delay: s, lastClaim: 9800 * time.Millisecond, now: 9900 * time.Millisecond, wantWait: 100 * time.Millisecond},
		"claims never pause: refills at last":  {delay: s, lastClaim: 10 * s, now: 10 * s, want: true},
		"a low pool waits for the delay only":  {delay: s, lastClaim: 2 * s, now: 2 * s, low: true, want: true},
		"a low pool, the delay not yet passed": {delay: s, lastClaim: 500 * time.Millisecond, now: 500 * time.Millisecond, low: true, wantWait: 500 * time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			have := 3 // of 4
			if tc.low {
				have = 1
			}
			got, wait := RefillDue(t0, t0.Add(tc.lastClaim), t0.Add(tc.now), tc.delay, have, 4)
			if got != tc.want || wait != tc.wantWait {
				t.Errorf("RefillDue = %v, %s; want %v, %s", got, wait, tc.want, tc.wantWait)
			}
		})
	}
}

func TestRefillDueScaled(t *testing.T) {
	// An explicit scale: no deficit start and no claim to wait for.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if ok, wait := RefillDue(time.Time{}, time.Time{}, now, time.Second, 0, 4); !ok || wait != 0 {
		t.Errorf("RefillDue after a scale = %v, %s; want at once", ok, wait)
	}
	// Exactly half is not low: it waits for the claims to pause.
	if ok, _ := RefillDue(now, now, now.Add(500*time.Millisecond), time.Second, 2, 4); ok {
		t.Errorf("a pool at half its size did not wait for claims to pause")
	}
}
