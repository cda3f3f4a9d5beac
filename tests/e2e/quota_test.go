package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// TestBridgeQuotaAndLease on real pods: a SandboxQuota of one sandbox
// refuses a second claim through the in-cluster bridge with
// RESOURCE_EXHAUSTED naming the limit; the first, claimed with a lease that
// the Go client renews, outlives several leases and keeps running code;
// once renewal stops, the controller deletes it, and the
// quota has room again.
func TestBridgeQuotaAndLease(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	one := int32(1)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 1),
		&v1alpha1.SandboxQuota{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxQuota"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"}, Spec: v1alpha1.SandboxQuotaSpec{MaxSandboxes: &one}})
	env.WaitPoolReady(t, ns, "python", 1)
	addr := env.ServiceAddr(t, bridgeNamespace, bridgeService, "grpc")
	c, err := sandpod.Dial(context.Background(), addr, sandpod.WithInsecure(), sandpod.WithToken(env.BridgeToken(t)),
		sandpod.WithNamespace(ns), sandpod.WithRetryPolicy(sandpod.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := Context(t)

	const lease = 8 * time.Second
	sb, err := c.Claim(ctx, "python", sandpod.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Claim(ctx, "python")
	var e *sandpod.Error
	if !errors.Is(err, sandpod.ErrResourceExhausted) || !errors.As(err, &e) || e.Reason != "SANDBOX_QUOTA_EXCEEDED" ||
		!strings.Contains(e.Message, `SandboxQuota "team"`) || !strings.Contains(e.Message, "maxSandboxes is 1") {
		t.Fatalf("second claim over the quota: %v", err)
	}

	time.Sleep(3 * lease) // renewed in the background meanwhile
	res, err := sb.Run(ctx, "echo alive")
	if err != nil || string(res.Stdout) != "alive\n" {
		t.Fatalf("after three leases of renewals: %+v, %v", res, err)
	}
	sb.StopRenewing()
	env.Eventually(t, "the unrenewed sandbox to be reclaimed", func() (bool, string) {
		_, err := sb.Refresh(ctx)
		return errors.Is(err, sandpod.ErrNotFound), "still there"
	})
	if _, err := c.Claim(ctx, "python"); err != nil {
		t.Fatalf("claim once the leased sandbox was reclaimed: %v", err)
	}
}
