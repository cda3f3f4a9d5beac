package lifecycle

import (
	"math"
	"time"
)

// RestartBackoff is the one crash-loop back-off of both engines (a
// replaced pod on Kubernetes, a restarted agent in the local engine), in the
// shape of kubelet's CrashLoopBackOff: the first replacement of a streak is
// immediate, the next waits Base, then twice as long each time up to Max. A
// workload that ran for Reset before it ended starts a new streak.
type RestartBackoff struct {
	Base, Max, Reset time.Duration
}

// The defaults of RestartBackoff: the controller's, and the local engine's
// unless its agentRestart settings say otherwise.
const (
	RestartBackoffBase  = 10 * time.Second
	RestartBackoffMax   = 5 * time.Minute
	RestartBackoffReset = 10 * time.Minute
)

// DefaultRestartBackoff is RestartBackoff with the defaults.
var DefaultRestartBackoff = RestartBackoff{Base: RestartBackoffBase, Max: RestartBackoffMax, Reset: RestartBackoffReset}

// Delay is the least time from the streak-th replacement of a streak to the
// next: none before the first, then Base, 2*Base, 4*Base, ... up to Max (no
// cap when Max is 0).
func (b RestartBackoff) Delay(streak int32) time.Duration {
	if streak <= 0 {
		return 0
	}
	d := b.Base
	for i := int32(1); i < streak; i++ {
		if (b.Max > 0 && d >= b.Max) || d > math.MaxInt64/2 {
			break
		}
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		return b.Max
	}
	return d
}

// Streak is the streak a workload that ran for ranFor before it ended
// counts on from: streak, or 0 (a new streak) when it ran for Reset (Reset
// 0: never).
func (b RestartBackoff) Streak(streak int32, ranFor time.Duration) int32 {
	if b.Reset > 0 && ranFor >= b.Reset {
		return 0
	}
	return streak
}

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

// DecideRestart decides on a failed workload made at created that ran for
// ranFor before it ended. A workload made before the last replacement is
// the one that replacement removed (a stale read): it is not replaced again.
func DecideRestart(now time.Time, h RestartHistory, created time.Time, ranFor time.Duration) RestartDecision {
	if !h.Last.IsZero() && created.Before(h.Last) {
		return RestartDecision{}
	}
	b := DefaultRestartBackoff
	streak := b.Streak(h.Streak, ranFor)
	if due := h.Last.Add(b.Delay(streak)); streak > 0 && now.Before(due) {
		return RestartDecision{Wait: due.Sub(now), Streak: streak}
	}
	return RestartDecision{Now: true, Streak: streak + 1}
}
