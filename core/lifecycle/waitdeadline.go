package lifecycle

import "time"

// WaitMargin is how long before the caller's deadline a wait for a sandbox
// (create, claim, resume) gives up, so that the server's answer (what the
// sandbox is waiting for, SANDBOX_NOT_READY) reaches the caller instead of
// gRPC's bare "deadline exceeded". Both backends use it.
const WaitMargin = 500 * time.Millisecond

// WaitDeadline is when a wait whose caller's deadline is deadline ends:
// WaitMargin earlier, unless less than twice the margin is left (then the
// caller's own deadline: a short call gets all its time).
func WaitDeadline(now, deadline time.Time) time.Time {
	if deadline.Sub(now) > 2*WaitMargin {
		return deadline.Add(-WaitMargin)
	}
	return deadline
}
