package sandpod

import (
	"context"
	"errors"
	"time"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Leases: a sandbox claimed or created with a lease (WithLease, or the
// template's defaultLease) is reclaimed by the server when its client has
// not renewed it for that long, so a crashed program does not hold its
// sandboxes until their shutdown time. Claim and Create start renewing it
// in the background, every quarter of the lease, until StopRenewing,
// Delete, Client.Close, or the end of the context of WithRenewContext.

type leaseConfig struct {
	d   time.Duration
	ctx context.Context
}

// WithLease asks for a lease of d (2s..24h) on the sandbox (Claim, Create,
// ClaimMany). The handle renews it in the background until StopRenewing,
// Delete or Client.Close, or the end of the context of WithRenewContext.
func WithLease(d time.Duration) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.lease.d = d })
}

// WithRenewContext ends the background renewal of the lease (WithLease, or
// the template's default) when ctx ends: pass your run's context so that
// its sandboxes are reclaimed once it is over, even if it forgets to
// delete them.
func WithRenewContext(ctx context.Context) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.lease.ctx = ctx })
}

// RenewLease renews the sandbox's lease now and returns when it ends
// unless renewed again (the handle does this in the background after Claim
// or Create). ErrFailedPrecondition (reason NO_LEASE) without a lease.
func (s *Sandbox) RenewLease(ctx context.Context) (time.Time, error) {
	var resp *pb.RenewLeaseResponse
	err := s.c.retry(ctx, "renew lease", func(ctx context.Context, _ int) (err error) {
		resp, err = s.c.rpc.RenewLease(ctx, &pb.RenewLeaseRequest{Name: s.name, Namespace: s.ns})
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	t := timeFromProto(resp.GetLeaseExpireTime())
	s.mu.Lock()
	s.info.LeaseExpireTime = t
	s.mu.Unlock()
	return t, nil
}

// StopRenewing stops the background renewal of the sandbox's lease: the
// server reclaims it when the lease runs out. It is safe to call on any
// handle, any number of times.
func (s *Sandbox) StopRenewing() {
	s.mu.Lock()
	stop := s.renew
	s.renew = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// renewEvery is a quarter of the lease (the server's lifecycle.RenewEvery),
// at least half a second.
func renewEvery(lease time.Duration) time.Duration {
	return max(lease/4, 500*time.Millisecond)
}

// startRenewing renews a leased sandbox's lease until StopRenewing, the
// client closes, or ctx ends. A renewal that fails for a transient reason
// is tried at the next tick; NOT_FOUND or FAILED_PRECONDITION (deleted, or
// no lease any more) ends the renewal.
func (s *Sandbox) startRenewing(ctx context.Context) {
	lease := s.Info().Lease
	if lease <= 0 {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if s.renew != nil {
		s.renew()
	}
	s.renew = cancel
	s.mu.Unlock()
	every := renewEvery(lease)
	go func() {
		defer cancel()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if s.c.closed.Load() {
				return
			}
			cctx, ccancel := context.WithTimeout(ctx, max(every, time.Second))
			_, err := s.RenewLease(cctx)
			ccancel()
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrFailedPrecondition) || errors.Is(err, ErrClosed) {
				return
			}
		}
	}()
}
