package lifecycle

import (
	"testing"
	"time"
)

func TestRestartBackoffDelay(t *testing.T) {
	small := RestartBackoff{Base: time.Second, Max: 5 * time.Minute}
	cases := map[string]struct {
		b      RestartBackoff
		streak int32
		want   time.Duration
	}{
		"first of a streak: at once":   {DefaultRestartBackoff, 0, 0},
		"second waits the base":        {DefaultRestartBackoff, 1, 10 * time.Second},
		"then twice as long":           {DefaultRestartBackoff, 2, 20 * time.Second},
		"and again":                    {DefaultRestartBackoff, 3, 40 * time.Second},
		"fifth":                        {DefaultRestartBackoff, 5, 160 * time.Second},
		"capped at 5 min":              {DefaultRestartBackoff, 6, 5 * time.Minute},
		"stays capped":                 {DefaultRestartBackoff, 1000, 5 * time.Minute},
		"negative streak: at once":     {DefaultRestartBackoff, -1, 0},
		"a smaller base":               {small, 1, time.Second},
		"a smaller base, doubled":      {small, 4, 8 * time.Second},
		"a smaller base, capped":       {small, 40, 5 * time.Minute},
		"no cap, no overflow":          {RestartBackoff{Base: time.Second}, 1000, time.Second << 33},
		"no cap":                       {RestartBackoff{Base: time.Second}, 11, 1024 * time.Second},
		"a base above the cap: capped": {RestartBackoff{Base: time.Hour, Max: time.Minute}, 1, time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.b.Delay(tc.streak); got != tc.want {
				t.Errorf("%+v.Delay(%d) = %s, want %s", tc.b, tc.streak, got, tc.want)
			}
		})
	}
}

func TestRestartBackoffStreak(t *testing.T) {
	cases := map[string]struct {
		b      RestartBackoff
		streak int32
		ranFor time.Duration
		want   int32
	}{
		"a short run goes on":         {DefaultRestartBackoff, 3, time.Minute, 3},
		"just under the reset":        {DefaultRestartBackoff, 3, 10*time.Minute - time.Nanosecond, 3},
		"a run of 10 min starts anew": {DefaultRestartBackoff, 3, 10 * time.Minute, 0},
		"no reset set: goes on":       {RestartBackoff{Base: time.Second}, 3, time.Hour, 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.b.Streak(tc.streak, tc.ranFor); got != tc.want {
				t.Errorf("Streak(%d, %s) = %d, want %d", tc.streak, tc.ranFor, got, tc.want)
			}
		})
	}
}

func TestDecideRestart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	tests := []struct {
		name    string
		now     time.Time
		h       RestartHistory
		created time.Time
		ranFor  time.Duration
		want    RestartDecision
	}{
		{"first failure: replaced at once", sec(5), RestartHistory{}, t0, 5 * time.Second, RestartDecision{Now: true, Streak: 1}},
		{"second failure within 10s: back off", sec(3), RestartHistory{Streak: 1, Last: t0}, t0, time.Second,
			RestartDecision{Wait: 7 * time.Second, Streak: 1}},
		{"second failure after 10s: replaced", sec(10), RestartHistory{Streak: 1, Last: t0}, t0, 9 * time.Second,
			RestartDecision{Now: true, Streak: 2}},
		{"third waits 20s", sec(15), RestartHistory{Streak: 2, Last: t0}, t0, 0,
			RestartDecision{Wait: 5 * time.Second, Streak: 2}},
		{"long streak capped at 5 min", sec(200), RestartHistory{Streak: 9, Last: t0}, t0, 0,
			RestartDecision{Wait: 100 * time.Second, Streak: 9}},
		{"ran 10 min healthily: new streak, at once", sec(601), RestartHistory{Streak: 9, Last: t0}, t0, 10 * time.Minute,
			RestartDecision{Now: true, Streak: 1}},
		{"ran just under 10 min: streak goes on", sec(599), RestartHistory{Streak: 9, Last: t0}, t0, 599 * time.Second,
			RestartDecision{Now: true, Streak: 10}},
		{"the pod the last replacement removed: nothing", sec(1), RestartHistory{Streak: 3, Last: sec(1)}, t0, 30 * time.Minute,
			RestartDecision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideRestart(tt.now, tt.h, tt.created, tt.ranFor); got != tt.want {
				t.Errorf("DecideRestart = %+v, want %+v", got, tt.want)
			}
		})
	}
}
