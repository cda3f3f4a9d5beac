package lifecycle

import "time"

// The back-off between replacements of a failed workload on Kubernetes, in
// the spirit of kubelet's CrashLoopBackOff: the first replacement of a
// streak is immediate, the next waits RestartBackoffBase, then twice as long
// each time up to RestartBackoffMax. A workload that ran for
// RestartBackoffReset before it failed starts a new streak.
const (
	RestartBackoffBase  = 10 * time.Second
	RestartBackoffMax   = 5 * time.Minute
	RestartBackoffReset = 10 * time.Minute
)

// RestartHistory is what a sandbox's status remembers of its replacements.
type RestartHistory struct {
	// Streak counts the replacements since the workload last ran for
	// RestartBackoffReset.
	Streak int32
	// Last is when the last replacement was made (zero: never).
	Last time.Time
}

// RestartDecision is what to do with a failed workload that may be replaced.
type RestartDecision struct {
	// Now: replace it now; Streak is then the streak this replacement
	// counts in (the history's, or 1 after a reset).
	Now    bool
	Streak int32
	// Wait: back off this long before replacing it (0 with Now false: the
	// failed workload was replaced already and is still going away).
	Wait time.Duration
}

// RestartBackoff is the least time from the streak-th replacement to the
// next one: none before the first, then 10s, 20s, 40s, ... up to 5 minutes.
func RestartBackoff(streak int32) time.Duration {
	if streak <= 0 {
		return 0
	}
	d := RestartBackoffBase
	for i := int32(1); i < streak; i++ {
		d *= 2
		if d >= RestartBackoffMax {
			return RestartBackoffMax
		}
	}
	return d
}

// DecideRestart decides on a failed workload made at created that ran for
// ranFor before it ended. A workload made before the last replacement is
// the one that replacement removed (a stale read): it is not replaced again.
func DecideRestart(now time.Time, h RestartHistory, created time.Time, ranFor time.Duration) RestartDecision {
	if !h.Last.IsZero() && created.Before(h.Last) {
		return RestartDecision{}
	}
	streak := h.Streak
	if ranFor >= RestartBackoffReset {
		streak = 0
	}
	if due := h.Last.Add(RestartBackoff(streak)); streak > 0 && now.Before(due) {
		return RestartDecision{Wait: due.Sub(now), Streak: streak}
	}
	return RestartDecision{Now: true, Streak: streak + 1}
}
