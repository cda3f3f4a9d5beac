package warmpool

import (
	"testing"
	"time"
)

func TestRefillDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		delay, elapsed time.Duration
		want           bool
		wantWait       time.Duration
	}{
		"no delay":          {want: true},
		"deficit just seen": {delay: time.Second, wantWait: time.Second},
		"part of the delay": {delay: time.Second, elapsed: 300 * time.Millisecond, wantWait: 700 * time.Millisecond},
		"delay passed":      {delay: time.Second, elapsed: time.Second, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, wait := refillDue(t0, t0.Add(tc.elapsed), tc.delay)
			if got != tc.want || wait != tc.wantWait {
				t.Errorf("refillDue = %v, %s; want %v, %s", got, wait, tc.want, tc.wantWait)
			}
		})
	}
	p := NewPacer(time.Second)
	if ok, _ := p.Due("p", t0); ok {
		t.Errorf("first sight of a deficit is due")
	}
	if ok, _ := p.Due("p", t0.Add(time.Second)); !ok {
		t.Errorf("deficit not due after the delay")
	}
	p.Done("p")
	if ok, _ := p.Due("p", t0.Add(2*time.Second)); ok {
		t.Errorf("Done did not reset the deficit")
	}
}
