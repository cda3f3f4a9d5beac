package k8s_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func makeQuota(ns, name string, maxSandboxes, maxPerMinute *int32) *v1alpha1.SandboxQuota {
	return &v1alpha1.SandboxQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxQuotaSpec{MaxSandboxes: maxSandboxes, MaxClaimsPerMinute: maxPerMinute},
	}
}

func i32(v int32) *int32 { return &v }

// Through the bridge: maxSandboxes refuses the claim and the create past
// it with RESOURCE_EXHAUSTED naming the quota; maxClaimsPerMinute counts
// the claims of the last minute, deleted ones too.
func TestBridgeQuota(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 1), makeQuota(ns, "team", i32(1), nil), makeQuota(ns, "rate", nil, i32(3)))
	waitPoolReady(t, ns, "pool", 1, "")
	api := startBridge(t, ns)
	ctx := callCtx(t)

	first, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	_, err = api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns})
	wantCode(t, err, codes.ResourceExhausted, "a claim past maxSandboxes")
	wantWhy(t, err, errinfo.ReasonSandboxQuotaExceeded)
	if msg := err.Error(); !strings.Contains(msg, `SandboxQuota "team"`) || !strings.Contains(msg, "maxSandboxes is 1 and 1 py sandboxes exist") {
		t.Errorf("message %q does not name the quota, the limit and the use", msg)
	}
	_, err = api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: "py", Namespace: ns})
	wantWhy(t, err, errinfo.ReasonSandboxQuotaExceeded)

	// Delete and claim again until the rate quota (3 a minute) says no.
	name := first.GetSandbox().GetName()
	for i := 2; i <= 3; i++ {
		if _, err := api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: name, Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		got, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns})
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		name = got.GetSandbox().GetName()
	}
	if _, err := api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: name, Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	_, err = api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns})
	wantCode(t, err, codes.ResourceExhausted, "a fourth claim in a minute")
	wantWhy(t, err, errinfo.ReasonClaimRateExceeded)
	if md := errinfo.Metadata(err); md["quota"] != "rate" || md["limit"] != "maxClaimsPerMinute" || md["used"] != "3" {
		t.Errorf("metadata %v", md)
	}
}

// Through the bridge: a leased sandbox that is not renewed is deleted by
// the controller after its lease; one renewed every lease/4 outlives
// several leases, and its renewals are written at most once per lease/3.
func TestBridgeLeaseReclaims(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 2))
	waitPoolReady(t, ns, "pool", 2, "")
	api := startBridge(t, ns)
	ctx := callCtx(t)
	const lease = 3 * time.Second

	claimLeased := func() *pb.Sandbox {
		got, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns, Lease: durationpb.New(lease)})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetSandbox().GetLease().AsDuration() != lease || got.GetSandbox().GetLeaseExpireTime() == nil {
			t.Fatalf("claimed sandbox lease %v expires %v", got.GetSandbox().GetLease(), got.GetSandbox().GetLeaseExpireTime())
		}
		return got.GetSandbox()
	}
	kept, dropped := claimLeased(), claimLeased()

	writes, last := 0, ""
	start := time.Now()
	for time.Since(start) < 4*lease {
		if _, err := api.RenewLease(ctx, &pb.RenewLeaseRequest{Name: kept.GetName(), Namespace: ns}); err != nil {
			t.Fatalf("renew after %s: %v", time.Since(start), err)
		}
		sb := &v1alpha1.Sandbox{}
		if err := env.Get(sb, ns, kept.GetName()); err != nil {
			t.Fatalf("the renewed sandbox after %s: %v", time.Since(start), err)
		}
		if v := sb.Annotations[v1alpha1.AnnotationLeaseExpires]; v != last {
			writes, last = writes+1, v
		}
		time.Sleep(lease / 4)
	}
	// 4 leases of renewals: at most one write per lease/3 (12 + the claim's).
	if writes > 13 {
		t.Errorf("%d lease writes in %s of renewals every %s, want at most one per lease/3", writes, 4*lease, lease/4)
	}
	waitGone(t, &v1alpha1.Sandbox{}, ns, dropped.GetName())
	sb := &v1alpha1.Sandbox{}
	if err := env.Get(sb, ns, kept.GetName()); err != nil || sb.DeletionTimestamp != nil {
		t.Fatalf("the renewed sandbox: %v (deleting %v)", err, sb.DeletionTimestamp)
	}
	// It stops being renewed: the controller deletes it in its turn.
	waitGone(t, &v1alpha1.Sandbox{}, ns, kept.GetName())
}

// A SandboxClaim over a quota waits with Ready=False, reason
// QuotaExceeded, naming the limit; it binds once room is made.
func TestClaimObjectWaitsForQuota(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makeQuota(ns, "team", i32(1), nil))
	create(t, makeClaim(ns, "c1", "py"))
	first := waitClaimReady(t, ns, "c1")
	create(t, makeClaim(ns, "c2", "py"))
	c := &v1alpha1.SandboxClaim{}
	harness.Eventually(t, harness.Timeout, "claim c2 held back by the quota", func() (bool, string) {
		if err := env.Get(c, ns, "c2"); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
		return cond != nil && cond.Reason == v1alpha1.ReasonQuotaExceeded && strings.Contains(cond.Message, "maxSandboxes is 1"),
			fmt.Sprintf("%+v", c.Status)
	})
	if c.Status.SandboxName != "" {
		t.Fatalf("claim c2 over the quota bound %s", c.Status.SandboxName)
	}
	if err := env.Client.Delete(callCtx(t), first); err != nil {
		t.Fatal(err)
	}
	waitClaimReady(t, ns, "c2")
}
