package lifecycle

import (
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// ExpiryAction is what to do about a sandbox's shutdown time now.
type ExpiryAction int

const (
	// ExpiryNone: not due (or no shutdown time).
	ExpiryNone ExpiryAction = iota
	// ExpiryDelete: due, delete the sandbox and its storage.
	ExpiryDelete
	// ExpiryRetain: due, stop the sandbox and keep it.
	ExpiryRetain
)

// DecideExpiry says what the shutdown time asks for at now, and, when nothing
// is due yet, how long until it is (0 when there is no shutdown time), so a
// caller can requeue exactly then instead of polling.
func DecideExpiry(now time.Time, shutdown *time.Time, policy v1alpha1.ShutdownPolicy) (ExpiryAction, time.Duration) {
	if shutdown == nil || shutdown.IsZero() {
		return ExpiryNone, 0
	}
	if wait := shutdown.Sub(now); wait > 0 {
		return ExpiryNone, wait
	}
	if policy == v1alpha1.ShutdownPolicyRetain {
		return ExpiryRetain, 0
	}
	return ExpiryDelete, 0
}

// IdleSuspendDue says whether a running sandbox idle since lastActivity should
// be suspended at now, and otherwise how long until it would be (0 when idle
// suspend is off).
func IdleSuspendDue(now, lastActivity time.Time, idleTimeout time.Duration) (bool, time.Duration) {
	if idleTimeout <= 0 {
		return false, 0
	}
	wait := lastActivity.Add(idleTimeout).Sub(now)
	if wait <= 0 {
		return true, 0
	}
	return false, wait
}

// ShutdownTime resolves the shutdown time of a new sandbox: an explicit time
// wins, then a TTL from now, then the template's default TTL; nil means none.
func ShutdownTime(now time.Time, explicit *time.Time, ttl, defaultTTL time.Duration) *time.Time {
	var t time.Time
	switch {
	case explicit != nil && !explicit.IsZero():
		t = *explicit
	case ttl > 0:
		t = now.Add(ttl)
	case defaultTTL > 0:
		t = now.Add(defaultTTL)
	default:
		return nil
	}
	return &t
}

// EffectivePolicy returns the request's policy, else the template's, else Delete.
func EffectivePolicy(requested, templateDefault v1alpha1.ShutdownPolicy) v1alpha1.ShutdownPolicy {
	switch {
	case requested != "":
		return requested
	case templateDefault != "":
		return templateDefault
	default:
		return v1alpha1.ShutdownPolicyDelete
	}
}

// NextWakeup returns the earliest positive duration of ds, or 0 if none is
// positive: the time a reconciler or engine loop should sleep.
func NextWakeup(ds ...time.Duration) time.Duration {
	var min time.Duration
	for _, d := range ds {
		if d > 0 && (min == 0 || d < min) {
			min = d
		}
	}
	return min
}
