package lifecycle

import (
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Deadlines are what end or stop a sandbox on its own: its shutdown time,
// its lease and its idle timeout.
type Deadlines struct {
	// Shutdown is the shutdown time (nil: none) and Policy the effective
	// shutdown policy, which the lease follows too.
	Shutdown *time.Time
	Policy   v1alpha1.ShutdownPolicy
	// Lease is when the lease runs out (nil: no lease, or one that no
	// longer applies).
	Lease *time.Time
	// IdleApplies: the idle timeout may act on the sandbox now (each
	// engine's own test: claimed, running, nothing in flight, an action it
	// applies); LastActivity, IdleTimeout and IdleAction then decide.
	IdleApplies  bool
	LastActivity time.Time
	IdleTimeout  time.Duration
	IdleAction   v1alpha1.IdleAction
}

// Due is what Deadlines ask for at a moment.
type Due struct {
	// Expiry is Delete or Retain once the shutdown time or the lease has
	// come; Lease says the lease's did (its client stopped renewing).
	Expiry ExpiryAction
	Lease  bool
	// Idle is IdleSuspend or IdlePause once the idle timeout has passed
	// and nothing expired ("" otherwise).
	Idle v1alpha1.IdleAction
	// Wait is how long until the next deadline not due now comes (0:
	// none), so a caller can wake exactly then instead of polling.
	Wait time.Duration
}

// DecideDue decides, for both engines, in one order: the shutdown time
// first, then the lease (a lease its client stopped renewing ends the
// sandbox as its shutdown time would), then idleness, which only a sandbox
// that nothing ended may reach.
func DecideDue(now time.Time, d Deadlines) Due {
	expiry, expiryWait := DecideExpiry(now, d.Shutdown, d.Policy)
	lease, leaseWait := LeaseExpiry(now, d.Lease, d.Policy)
	out := Due{Wait: NextWakeup(expiryWait, leaseWait)}
	switch {
	case expiry != ExpiryNone:
		out.Expiry = expiry
		return out
	case lease != ExpiryNone:
		out.Expiry, out.Lease = lease, true
		return out
	case !d.IdleApplies:
		return out
	}
	idle, idleWait := IdleDue(now, d.LastActivity, d.IdleTimeout, d.IdleAction)
	out.Idle, out.Wait = idle, NextWakeup(out.Wait, idleWait)
	return out
}

// SandboxDeadlines reads the deadlines of a Sandbox object: its shutdown
// time and policy, the lease the bridge keeps in its annotations
// (sandpod.dev/lease-expires, when sandpod.dev/lease is set and the time
// parses), and its idle timeout from its last activity (LastActivity).
// IdleApplies is the caller's to set.
func SandboxDeadlines(sb *v1alpha1.Sandbox) Deadlines {
	lc := sb.Spec.Lifecycle
	d := Deadlines{Policy: EffectivePolicy(lc.ShutdownPolicy, ""), LastActivity: LastActivity(sb), IdleAction: lc.IdleAction}
	if lc.ShutdownTime != nil {
		t := lc.ShutdownTime.Time
		d.Shutdown = &t
	}
	if _, ok := sb.Annotations[v1alpha1.AnnotationLease]; ok {
		if t, err := time.Parse(time.RFC3339Nano, sb.Annotations[v1alpha1.AnnotationLeaseExpires]); err == nil {
			d.Lease = &t
		}
	}
	if lc.IdleTimeout != nil {
		d.IdleTimeout = lc.IdleTimeout.Duration
	}
	return d
}
