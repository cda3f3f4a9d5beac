package goclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// waitGoneGo polls until the sandbox is reclaimed (a generous deadline: the
// engine wakes at the lease's end, a loaded machine may be slow to delete).
func waitGoneGo(t *testing.T, c *sandpod.Client, name string) {
	t.Helper()
	ctx := testContext(t)
	for {
		_, err := c.Get(ctx, name)
		if errors.Is(err, sandpod.ErrSandboxNotFound) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s was not reclaimed after its lease", name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A leased handle is renewed in the background past several leases; once
// renewal stops (StopRenewing, or the end of WithRenewContext's context)
// the server reclaims the sandbox.
func TestLeaseRenewedUntilStopped(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	// Long enough for the two claims to finish within the first lease on
	// a loaded machine.
	const lease = 6 * time.Second
	runCtx, endRun := context.WithCancel(context.Background())
	defer endRun()
	byStop := claim(t, c, "python", sandpod.WithLease(lease))
	byCtx := claim(t, c, "python", sandpod.WithLease(lease), sandpod.WithRenewContext(runCtx))
	if info := byStop.Info(); info.Lease != lease || info.LeaseExpireTime.IsZero() {
		t.Fatalf("lease %v, expires %v", info.Lease, info.LeaseExpireTime)
	}
	time.Sleep(3 * lease)
	for _, sb := range []*sandpod.Sandbox{byStop, byCtx} {
		info, err := sb.Refresh(ctx)
		if err != nil || info.Phase != sandpod.PhaseRunning {
			t.Fatalf("%s after three leases of renewals: %v %v", sb.Name(), info.Phase, err)
		}
	}
	byStop.StopRenewing()
	endRun()
	waitGoneGo(t, c, byStop.Name())
	waitGoneGo(t, c, byCtx.Name())

	plain := claim(t, c, "python")
	if _, err := plain.RenewLease(ctx); !errors.Is(err, sandpod.ErrFailedPrecondition) {
		t.Fatalf("RenewLease without a lease: %v", err)
	}
}
