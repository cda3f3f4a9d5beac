package lifecycle

import (
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Lease bounds: shorter would renew too often to be cheap; longer is what a
// shutdown time is for.
const (
	MinLease = 2 * time.Second
	MaxLease = 24 * time.Hour
)

// LeaseExpiry says what an expired lease asks for, and otherwise how long
// until it expires (0 without a lease). A sandbox whose client stopped
// renewing is treated as if its shutdown time had come: deleted, or
// stopped and kept under ShutdownPolicy Retain.
func LeaseExpiry(now time.Time, expires *time.Time, policy v1alpha1.ShutdownPolicy) (ExpiryAction, time.Duration) {
	return DecideExpiry(now, expires, policy)
}

// RenewLease is the new expiry of a lease of length lease renewed at now,
// and whether to store it. It is stored only when less than two thirds of
// the lease is left, so clients renewing every lease/4 cost one store (one
// API write on Kubernetes) per lease/2, never more than one per lease/3.
func RenewLease(now time.Time, current *time.Time, lease time.Duration) (time.Time, bool) {
	next := now.Add(lease)
	if current == nil || current.IsZero() {
		return next, true
	}
	if current.Sub(now) >= lease*2/3 {
		return *current, false
	}
	return next, true
}

// LeaseAfterRestart is a lease's expiry once the server that keeps it is
// back: its clients could not renew while it was down, so the lease gets
// its full length again from now (it never ends earlier than stored).
func LeaseAfterRestart(now, expires time.Time, lease time.Duration) time.Time {
	if t := now.Add(lease); t.After(expires) {
		return t
	}
	return expires
}

// RenewEvery is how often a client renews a lease: a quarter of it, so
// three renewals can be lost before it expires.
func RenewEvery(lease time.Duration) time.Duration { return lease / 4 }
