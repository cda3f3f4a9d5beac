package lifecycle

import (
	"testing"
	"time"
)

func TestRestartBackoff(t *testing.T) {
	for _, tt := range []struct {
		streak int32
		want   time.Duration
	}{
		{0, 0}, {1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second},
		{5, 160 * time.Second}, {6, 5 * time.Minute}, {7, 5 * time.Minute}, {1000, 5 * time.Minute},
	} {
		if got := RestartBackoff(tt.streak); got != tt.want {
			t.Errorf("RestartBackoff(%d) = %s, want %s", tt.streak, got, tt.want)
		}
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
