package warmpool

import (
	"sync"
	"time"

	"github.com/sandpod/sandpod/core/lifecycle"
)

// Pacer keeps what the controller knows of each pool's deficit (when it
// appeared, when a claim last took a member) for lifecycle.RefillDue, the
// refill pacing both engines share: a deficit refills once claims have
// paused for the delay (at most lifecycle.RefillWaitFactor delays after it
// appeared; a pool below half its size waits only the delay after its
// deficit appeared), and a refill under way pauses again when claims come
// back. A burst of claims then meets a quiet API server, and the creations
// that follow it go out as one batch after it, instead of between the claims
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
	return lifecycle.RefillDue(d.since, d.lastClaim, now, p.delay, have, desired)
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
