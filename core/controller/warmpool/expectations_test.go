package warmpool

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		expect   []string
		seen     map[string]bool
		at       time.Duration
		want     int
		wantNext time.Duration
	}{
		"nothing expected":    {want: 0},
		"unseen are inflight": {expect: []string{"a", "b"}, at: 10 * time.Second, want: 2, wantNext: 50 * time.Second},
		"seen are dropped":    {expect: []string{"a", "b"}, seen: map[string]bool{"a": true}, want: 1, wantNext: time.Minute},
		"expired are dropped": {expect: []string{"a"}, at: 2 * time.Minute, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := NewExpectations(time.Minute)
			for _, n := range tc.expect {
				e.Expect("ns/p", n, t0)
			}
			got, next := e.InFlight("ns/p", func(n string) bool { return tc.seen[n] }, t0.Add(tc.at))
			if got != tc.want || next != tc.wantNext {
				t.Errorf("InFlight = %d, %s; want %d, %s", got, next, tc.want, tc.wantNext)
			}
		})
	}
	e := NewExpectations(time.Minute)
	e.Expect("ns/p", "a", t0)
	e.Forget("ns/p")
	if n, _ := e.InFlight("ns/p", func(string) bool { return false }, t0); n != 0 {
		t.Errorf("Forget left %d", n)
	}
}
