package engine

import (
	"context"
	"sort"
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// maxIdleWait bounds a sleep of the loop, as a safety net for a missed kick.
const maxIdleWait = 30 * time.Second

// loop keeps pools at size and enforces shutdown times and idle suspend. It
// wakes on a kick (a claim, a scale, a sandbox change) or when the next
// deadline that the lifecycle functions computed comes due: no polling.
func (e *Engine) loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-timer.C:
		}
		wait := e.reconcile(ctx)
		if wait <= 0 || wait > maxIdleWait {
			wait = maxIdleWait
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// action is one side effect the reconcile pass decided on.
type action struct {
	kind string // "create", "delete", "restart", "suspend", "pause", "retain"
	sb   *sandbox
	pool *pool
	// lease: the action is the sandbox's lease running out (lease.go).
	lease bool
}

func (e *Engine) reconcile(ctx context.Context) time.Duration {
	now := e.now()
	var actions []action
	var waits []time.Duration

	e.mu.Lock()
	for _, sb := range e.sandboxes {
		r := &sb.rec
		if r.Deleting || sb.busy {
			continue
		}
		if !r.RestartDue.IsZero() && sb.proc == nil && lifecycle.ShouldRunWorkload(sb.observed()) {
			if wait := r.RestartDue.Sub(now); wait > 0 {
				waits = append(waits, wait)
			} else {
				actions = append(actions, action{kind: "restart", sb: sb})
			}
		}
		// Shutdown time, then lease, then idleness: the one order of both
		// engines (lifecycle.DecideDue).
		d := lifecycle.Deadlines{Shutdown: r.ShutdownTime, Policy: r.ShutdownPolicy,
			IdleApplies:  r.Claimed && sb.active == 0 && sb.phase() == v1alpha1.SandboxRunning,
			LastActivity: r.LastActivity, IdleTimeout: r.Spec.IdleTimeout.Duration, IdleAction: r.Spec.IdleAction}
		if r.Claimed && !r.Expired {
			d.Lease = r.LeaseExpires
		}
		due := lifecycle.DecideDue(now, d)
		waits = append(waits, due.Wait)
		switch {
		case due.Expiry == lifecycle.ExpiryDelete:
			actions = append(actions, action{kind: "delete", sb: sb, lease: due.Lease})
		case due.Expiry == lifecycle.ExpiryRetain && !r.Expired:
			actions = append(actions, action{kind: "retain", sb: sb, lease: due.Lease})
		case due.Idle == v1alpha1.IdlePause:
			actions = append(actions, action{kind: "pause", sb: sb})
		case due.Idle == v1alpha1.IdleSuspend:
			actions = append(actions, action{kind: "suspend", sb: sb})
		}
	}
	for key, p := range e.pools {
		spec, ok := e.templates[p.namespace+"/"+p.template]
		if !ok {
			continue
		}
		if until := e.poolBackoff[key].until; now.Before(until) {
			waits = append(waits, until.Sub(now))
			continue
		}
		if !e.poolSnapshotReadyLocked(p) {
			continue // taking the snapshot pokes the loop
		}
		var members []lifecycle.PoolMember
		byName := map[string]*sandbox{}
		for _, sb := range e.sandboxes {
			r := &sb.rec
			if r.Namespace != p.namespace || r.Pool != p.name || r.Claimed || r.Deleting {
				continue
			}
			byName[r.Name] = sb
			members = append(members, poolMember(sb))
		}
		// Members are recorded before they start, so there is nothing in
		// flight that the members do not already show.
		plan := lifecycle.PlanPool(int(p.replicas), members, spec.Hash, 0, e.cfg.PoolBatch)
		if plan.Create == 0 {
			p.deficit = false
		} else {
			if !p.deficit {
				p.deficit, p.deficitSince = true, now
			}
			if due, wait := lifecycle.RefillDue(p.deficitSince, p.lastClaim, now, e.cfg.PoolRefillDelay, len(members), int(p.replicas)); !due {
				plan.Create = 0 // claims are still coming: refill after the burst
				waits = append(waits, wait)
			}
		}
		for _, name := range plan.Delete {
			actions = append(actions, action{kind: "delete", sb: byName[name]})
		}
		for i := 0; i < plan.Create; i++ {
			actions = append(actions, action{kind: "create", pool: p})
		}
	}
	e.mu.Unlock()

	sort.SliceStable(actions, func(i, j int) bool { return actions[i].kind < actions[j].kind })
	for _, a := range actions {
		e.act(ctx, a)
	}
	return lifecycle.NextWakeup(waits...)
}

func (e *Engine) act(ctx context.Context, a action) {
	switch a.kind {
	case "delete":
		if a.lease {
			e.log.Info("lease expired: deleting", "sandbox", a.sb.key())
		}
		if err := e.markDeleting(a.sb); err == nil {
			go func() {
				if err := e.finishDelete(a.sb); err != nil {
					e.log.Error("delete", "sandbox", a.sb.key(), "err", err)
				}
			}()
		}
	case "retain":
		e.mu.Lock()
		next := a.sb.rec
		next.Expired = true
		next.Message = "shutdown time reached; retained with its files"
		if a.lease {
			next.Message = "lease expired (its client stopped renewing it); retained with its files"
			next.LeaseExpires = nil
		}
		err := e.store.put(&next, "", nil)
		if err == nil {
			a.sb.rec = next
		}
		e.mu.Unlock()
		if err == nil {
			e.stop(a.sb)
			e.publish(a.sb)
		}
	case "restart":
		e.restartAgent(a.sb)
	case "suspend":
		e.log.Info("idle timeout: suspending", "sandbox", a.sb.key())
		_, _ = e.Suspend(a.sb.rec.Namespace, a.sb.rec.Name)
	case "pause":
		if !e.cg.Usable() {
			e.log.Info("idle timeout: suspending (pause needs the cgroup freezer, and serve runs with --no-limits)", "sandbox", a.sb.key())
			_, _ = e.Suspend(a.sb.rec.Namespace, a.sb.rec.Name)
			return
		}
		e.log.Info("idle timeout: pausing", "sandbox", a.sb.key())
		if _, err := e.Pause(a.sb.rec.Namespace, a.sb.rec.Name); err != nil {
			e.log.Warn("idle pause", "sandbox", a.sb.key(), "err", err)
		}
	case "create":
		e.createMember(a.pool)
	}
}

// createMember records and starts one warm pool member. Start failures back
// the pool off exponentially, so a template that cannot start does not spin.
func (e *Engine) createMember(p *pool) {
	sb, _, err := e.newSandbox(newParams{namespace: p.namespace, template: p.template, pool: p.name, op: "pool", snapshot: p.snapshot})
	if err != nil {
		e.log.Error("warm pool: record member", "pool", p.name, "err", err)
		return
	}
	key := p.namespace + "/" + p.name
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.StartTimeout+10*time.Second)
		defer cancel()
		err := e.run(ctx, sb)
		e.mu.Lock()
		b := e.poolBackoff[key]
		if err != nil && err != errGone {
			b.failures++
			b.until = e.now().Add(min(time.Second<<min(b.failures-1, 8), 5*time.Minute))
			e.log.Warn("warm pool: member failed to start; backing off", "pool", key, "failures", b.failures, "until", b.until)
		} else {
			b = backoff{}
		}
		e.poolBackoff[key] = b
		e.mu.Unlock()
		e.poke()
	}()
}

// backoff paces a pool whose members fail to start.
type backoff struct {
	failures int
	until    time.Time
}
