package integration

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// otherTemplate is the python template under another name, which the
// template- and pool-scoped quotas below do not cover.
var otherTemplate = strings.Replace(testserver.PythonTemplate, "name: python", "name: other", 1)

func quotaConfig(spec string) string {
	return testserver.PythonPool(1) + "---\n" + otherTemplate + `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxQuota
metadata:
  name: team
spec:
` + spec
}

// maxSandboxes counts claimed and created sandboxes (not the pool's
// unclaimed member), refuses the next claim and create with
// RESOURCE_EXHAUSTED naming the quota, the limit and the use, lets a
// retried claim through, and makes room again once one is deleted.
func TestQuotaMaxSandboxes(t *testing.T) {
	srv := startServer(t, quotaConfig("  maxSandboxes: 2\n"))
	c := srv.Client()
	first, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", RequestId: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "other"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python"})
	wantCode(t, err, codes.ResourceExhausted, `SandboxQuota "team" of namespace "default": maxSandboxes is 2 and 2 python sandboxes exist`)
	wantWhy(t, err, errinfo.ReasonSandboxQuotaExceeded)
	if md := errinfo.Metadata(err); md["quota"] != "team" || md["limit"] != "maxSandboxes" || md["max"] != "2" || md["used"] != "2" {
		t.Fatalf("metadata %v", md)
	}
	_, err = c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "other"})
	wantCode(t, err, codes.ResourceExhausted, "maxSandboxes is 2")

	// A retry of a claim that was admitted is not a new sandbox.
	again, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", RequestId: "first"})
	if err != nil || again.GetSandbox().GetName() != first.GetSandbox().GetName() {
		t.Fatalf("retried claim: %v, %v", again.GetSandbox().GetName(), err)
	}

	if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: first.GetSandbox().GetName()}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python"}); err != nil {
		t.Fatalf("claim after a delete: %v", err)
	}
}

// maxClaimsPerMinute on a pool covers its template's claims, warm or cold,
// counts sandboxes deleted since, says when to retry, and leaves other
// templates alone.
func TestQuotaClaimsPerMinuteOfAPool(t *testing.T) {
	srv := startServer(t, quotaConfig("  maxClaimsPerMinute: 2\n  pools: [python]\n"))
	c := srv.Client()
	for i := range 2 {
		resp, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python"})
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: resp.GetSandbox().GetName()}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python"})
	wantCode(t, err, codes.ResourceExhausted, "maxClaimsPerMinute is 2 and 2 python sandboxes were handed out in the last minute: retry in")
	wantWhy(t, err, errinfo.ReasonClaimRateExceeded)
	if d, perr := time.ParseDuration(errinfo.Metadata(err)["retry_after"]); perr != nil || d <= 0 || d > time.Minute {
		t.Fatalf("retry_after %q (%v)", errinfo.Metadata(err)["retry_after"], perr)
	}
	if _, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "other"}); err != nil {
		t.Fatalf("a template the quota does not cover: %v", err)
	}
}

// A sandbox whose lease is not renewed is reclaimed after the lease (the
// engine's loop, per its shutdown policy); one that is renewed outlives
// several leases; RenewLease of a sandbox without one is NO_LEASE.
func TestLeaseReclaimsUnrenewedSandboxes(t *testing.T) {
	srv := startServer(t, defaultConfig)
	c := srv.Client()
	// Long enough for the three claims below to finish within the first
	// lease on a loaded machine.
	const lease = 6 * time.Second
	claimLeased := func(policy sandpodv1.ShutdownPolicy) *sandpodv1.Sandbox {
		resp, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", Lease: dur(lease), ShutdownPolicy: policy})
		if err != nil {
			t.Fatal(err)
		}
		sb := resp.GetSandbox()
		if sb.GetLease().AsDuration() != lease || sb.GetLeaseExpireTime() == nil {
			t.Fatalf("lease %v, expires %v", sb.GetLease(), sb.GetLeaseExpireTime())
		}
		return sb
	}
	kept, dropped, retained := claimLeased(0), claimLeased(0), claimLeased(sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_RETAIN)

	// Renew one every lease/4 for three leases; the others get nothing.
	start := time.Now()
	for time.Since(start) < 3*lease {
		if _, err := c.RenewLease(ctx(t), &sandpodv1.RenewLeaseRequest{Name: kept.Name}); err != nil {
			t.Fatalf("renew after %s: %v", time.Since(start), err)
		}
		time.Sleep(lease / 4)
	}
	if got, err := getSandbox(t, c, kept.Name); err != nil || got.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("the renewed sandbox after three leases: %v %v", got.GetPhase(), err)
	}
	eventually(t, "the unrenewed sandbox deleted", func() bool {
		_, err := getSandbox(t, c, dropped.Name)
		return err != nil
	})
	_, err := getSandbox(t, c, dropped.Name)
	wantWhy(t, err, errinfo.ReasonSandboxNotFound)
	eventually(t, "the retained sandbox expired", func() bool {
		got, _ := getSandbox(t, c, retained.Name)
		return got.GetPhase() == sandpodv1.Phase_PHASE_EXPIRED
	})
	if got, _ := getSandbox(t, c, retained.Name); !strings.Contains(got.GetMessage(), "lease expired") {
		t.Fatalf("message of the retained sandbox: %q", got.GetMessage())
	}

	plain, _ := claim(t, c, "python")
	_, err = c.RenewLease(ctx(t), &sandpodv1.RenewLeaseRequest{Name: plain.Name})
	wantCode(t, err, codes.FailedPrecondition, "has no lease")
	wantWhy(t, err, errinfo.ReasonNoLease)
	_, err = c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", Lease: dur(time.Second)})
	wantCode(t, err, codes.InvalidArgument, "lease")
}

// Clients cannot renew while the server is down: a restart longer than a
// lease gives every lease its full length again instead of reclaiming the
// sandboxes at once; unrenewed after that, they go.
func TestLeaseSurvivesAServerRestart(t *testing.T) {
	srv := startServer(t, defaultConfig)
	// Long enough that the restart and the first Get fit in one lease on a
	// loaded machine (with 3 s, a start that took longer lost the sandbox
	// before the Get could see it).
	const lease = 15 * time.Second
	resp, err := srv.Client().ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", Lease: dur(lease)})
	if err != nil {
		t.Fatal(err)
	}
	name := resp.GetSandbox().GetName()
	srv.Stop(t)
	time.Sleep(lease + 2*time.Second)
	srv.StartAgain(t)
	c := srv.Client()
	got, err := getSandbox(t, c, name)
	if err != nil {
		t.Fatalf("after a restart longer than its lease: %v", err)
	}
	if !got.GetLeaseExpireTime().AsTime().After(time.Now()) {
		t.Fatalf("lease expires %v, before now", got.GetLeaseExpireTime().AsTime())
	}
	eventually(t, "the unrenewed sandbox reclaimed after the restart", func() bool {
		_, err := getSandbox(t, c, name)
		return err != nil
	})
}
