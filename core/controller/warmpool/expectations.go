package warmpool

import (
	"sync"
	"time"
)

// Expectations remembers the members a pool created that its cache has not
// shown yet, so the next pass does not create them again. An expectation
// older than ttl is dropped (the watch event was lost or the create failed
// late), so a pool can never stall on one.
//
// It is the one lagging-cache guard that does not use readyourwrites.Store,
// which the other reconcilers and the bridge read their writes back through.
// A Store answers "what is ns/name now": a read of an object by name merges
// the cache's version with the newest one this process wrote. A pool asks
// something else: how many of its creates its list of members is still
// missing, under names it has never read, and when the next of them lapses.
// That lapse is part of the pool's decision, not a safety bound: the pass
// requeues for it (InFlight's second result), so a pool whose create event
// was lost refills then instead of waiting for an unrelated event. It is the
// expectations of Kubernetes' own ReplicaSet controller, a count per owner,
// and it never reads a created object back.
type Expectations struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]map[string]time.Time
}

// NewExpectations returns empty expectations with the given ttl.
func NewExpectations(ttl time.Duration) *Expectations {
	return &Expectations{ttl: ttl, m: map[string]map[string]time.Time{}}
}

// Expect records that pool created member name at now.
func (e *Expectations) Expect(pool, name string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m[pool] == nil {
		e.m[pool] = map[string]time.Time{}
	}
	e.m[pool][name] = now
}

// InFlight drops the expectations of pool that are seen or expired at now and
// returns how many remain, and the soonest time one of them expires.
func (e *Expectations) InFlight(pool string, seen func(name string) bool, now time.Time) (int, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var next time.Duration
	for name, at := range e.m[pool] {
		left := at.Add(e.ttl).Sub(now)
		if seen(name) || left <= 0 {
			delete(e.m[pool], name)
			continue
		}
		if next == 0 || left < next {
			next = left
		}
	}
	n := len(e.m[pool])
	if n == 0 {
		delete(e.m, pool)
	}
	return n, next
}

// Forget drops every expectation of pool.
func (e *Expectations) Forget(pool string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, pool)
}
