package warmpool

import (
	"sync"
	"time"
)

// maxWaitFactor bounds how long claims can keep holding a refill back: a
// deficit older than maxWaitFactor × the delay refills even while claims
// still arrive, so steady claim traffic cannot drain a pool for good.
const maxWaitFactor = 10

// Pacer makes a pool's refill yield to claims: a deficit refills only once
// no claim has taken a member for a short delay (or once it is maxWaitFactor
// delays old), and a refill under way pauses again when claims come back.
// A pool down to less than half its members does not wait for the claims
// to pause (only for the delay since its deficit appeared, as before), so a
// small pool under steady claims does not run dry.
// A burst of claims then meets a quiet API server, and the creations that
// follow it go out as one batch after it, instead of between the claims
// (where each refilled member's four or five writes slowed their single
// adoption write down).
type Pacer struct {
	delay time.Duration
	mu    sync.Mutex
	pools map[string]*deficit
}

// deficit is what the pacer knows of one pool's refill.
type deficit struct {
	since     time.Time // first seen
	lastClaim time.Time // when the pool last had fewer members than before
	have      int       // members plus creations in flight, after the last pass
}

// NewPacer returns a pacer with the given delay (0: refill at once).
func NewPacer(delay time.Duration) *Pacer {
	return &Pacer{delay: delay, pools: map[string]*deficit{}}
}

// Due records that pool, of desired members, wants to create members at
// now, holding have members (created or in flight), and says whether it may,
// and otherwise how long to wait. Fewer members than after the last pass
// means claims took some since.
func (p *Pacer) Due(pool string, now time.Time, have, desired int) (bool, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.pools[pool]
	if !ok {
		d = &deficit{since: now, lastClaim: now, have: have}
		p.pools[pool] = d
	}
	if have < d.have {
		d.lastClaim = now
	}
	d.have = have
	return refillDue(d.since, d.lastClaim, now, p.delay, 2*have < desired)
}

// Created records n creations of a pass that was due, so that the next pass
// does not count them as members a claim left behind.
func (p *Pacer) Created(pool string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.pools[pool]; ok {
		d.have += n
	}
}

// Done forgets pool's deficit (when it has none left to create).
func (p *Pacer) Done(pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pools, pool)
}

// refillDue says whether a deficit first seen at since, whose pool last lost
// a member to a claim at lastClaim, may be refilled at now: once the claims
// have paused for delay, or once the deficit is maxWaitFactor delays old;
// a pool that is low (less than half left) only waits for delay after since.
func refillDue(since, lastClaim, now time.Time, delay time.Duration, low bool) (bool, time.Duration) {
	if low {
		lastClaim = since
	}
	wait := min(lastClaim.Add(delay).Sub(now), since.Add(maxWaitFactor*delay).Sub(now))
	if wait <= 0 {
		return true, 0
	}
	return false, wait
}
