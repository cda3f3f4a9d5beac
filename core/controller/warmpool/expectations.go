package warmpool

import (
	"sync"
	"time"
)

// Expectations remembers the members a pool created that its cache has not
// shown yet, so the next pass does not create them again. An expectation
// older than ttl is dropped (the watch event was lost or the create failed
// late), so a pool can never stall on one.
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
