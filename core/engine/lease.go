package engine

import (
	"time"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// leaseFor is the lease of a new claim or create: the request's, else the
// template's default (0: none).
func leaseFor(requested *time.Duration, spec runSpec) time.Duration {
	if requested != nil {
		return *requested
	}
	return spec.DefaultLease.Duration
}

// setLease starts the lease of a record being handed out now.
func setLease(r *record, lease time.Duration, now time.Time) {
	r.Lease, r.LeaseExpires = lease, nil
	if lease > 0 {
		t := now.Add(lease)
		r.LeaseExpires = &t
	}
}

// RenewLease moves a sandbox's lease; the store is written only when
// lifecycle.RenewLease says so (less than two thirds of it left).
func (e *Engine) RenewLease(ns, name string) (time.Time, error) {
	sb, err := e.lookupFor(ns, name, lifecycle.CallExtend)
	if err != nil {
		return time.Time{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if sb.rec.Lease <= 0 || sb.rec.LeaseExpires == nil {
		return time.Time{}, failf(ErrConflict, errinfo.ReasonNoLease, "sandbox %q has no lease (create or claim it with one, or give its template a defaultLease)", name)
	}
	next, write := lifecycle.RenewLease(e.now(), sb.rec.LeaseExpires, sb.rec.Lease)
	if !write {
		return next, nil
	}
	rec := sb.rec
	rec.LeaseExpires = &next
	if err := e.store.put(&rec, "", nil); err != nil {
		return time.Time{}, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save lease: %v", err)
	}
	sb.rec = rec
	return next, nil
}

// leaseGrace gives every lease its full length from now when the engine
// starts (lifecycle.LeaseAfterRestart): its clients could not renew while
// it was down, so a restart longer than a lease must not reclaim their
// sandboxes. In memory only: the next renewal stores it.
func (e *Engine) leaseGrace(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sb := range e.sandboxes {
		if r := &sb.rec; r.Lease > 0 && r.LeaseExpires != nil && !r.Expired {
			t := lifecycle.LeaseAfterRestart(now, *r.LeaseExpires, r.Lease)
			r.LeaseExpires = &t
		}
	}
}
