package lifecycle

import "time"

// RefillWaitFactor bounds how long claims can hold a refill back: a deficit
// older than RefillWaitFactor × the delay refills even while claims still
// arrive, so steady claim traffic cannot drain a pool for good.
const RefillWaitFactor = 10

// RefillDue is the one meaning of a pool's refill delay (--pool-refill-delay)
// in both engines: a pool refills once claims have paused for delay, so a
// burst of claims meets idle cores and a quiet API server, and the refill
// after it goes out as one batch. Two bounds keep a pool from running dry:
// a deficit never waits more than RefillWaitFactor delays after it appeared
// (since), and a pool below half its size (have of desired) waits only delay
// after its deficit appeared, claims or not.
//
// lastClaim is when a claim last took a member (zero: never, or an explicit
// scale asked for the refill now; a zero since refills at once too). It says
// whether to create now, and otherwise how long to wait.
func RefillDue(since, lastClaim, now time.Time, delay time.Duration, have, desired int) (bool, time.Duration) {
	if 2*have < desired {
		lastClaim = since
	}
	wait := min(lastClaim.Add(delay).Sub(now), since.Add(RefillWaitFactor*delay).Sub(now))
	if wait <= 0 {
		return true, 0
	}
	return false, wait
}
