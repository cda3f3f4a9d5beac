package warmpool

import (
	"sync"
	"time"
)

// Pacer holds back a pool's refill until its deficit has lasted a short
// delay, so the creations that follow a burst of claims go out as one batch
// after the burst, instead of one by one between the claims (whose single
// adoption write they would otherwise slow down).
type Pacer struct {
	delay time.Duration
	mu    sync.Mutex
	since map[string]time.Time
}

// NewPacer returns a pacer with the given delay (0: refill at once).
func NewPacer(delay time.Duration) *Pacer {
	return &Pacer{delay: delay, since: map[string]time.Time{}}
}

// Due records that pool wants to create members at now and says whether it
// may, and otherwise how long to wait.
func (p *Pacer) Due(pool string, now time.Time) (bool, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	since, ok := p.since[pool]
	if !ok {
		since = now
		p.since[pool] = now
	}
	return refillDue(since, now, p.delay)
}

// Done forgets pool's deficit (when it has none left to create).
func (p *Pacer) Done(pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.since, pool)
}

// refillDue says whether a deficit seen since `since` may be refilled at now.
func refillDue(since, now time.Time, delay time.Duration) (bool, time.Duration) {
	wait := since.Add(delay).Sub(now)
	if wait <= 0 {
		return true, 0
	}
	return false, wait
}
