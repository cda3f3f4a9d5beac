package k8s_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

func waitClaimReady(t *testing.T, ns, name string) *v1alpha1.SandboxClaim {
	t.Helper()
	c := &v1alpha1.SandboxClaim{}
	harness.Eventually(t, harness.Timeout, "claim "+name+" ready", func() (bool, string) {
		if err := env.Get(c, ns, name); err != nil {
			return false, err.Error()
		}
		return c.Status.SandboxName != "" && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady),
			fmt.Sprintf("%+v", c.Status)
	})
	return c
}

func TestClaimAdoptsWarmMember(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 2))
	members := waitPoolReady(t, ns, "pool", 2, "")

	c := makeClaim(ns, "job-1", "py")
	c.Spec.Labels = map[string]v1alpha1.LabelValue{"team": "rl"}
	c.Spec.Env = []corevar{{Name: "TASK", Value: "42"}}
	at := metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second))
	c.Spec.Lifecycle.ShutdownTime = &at
	create(t, c)
	got := waitClaimReady(t, ns, "job-1")
	if !got.Status.Warm {
		t.Errorf("claim was not served warm: %+v", got.Status)
	}
	adopted := false
	for _, m := range members {
		adopted = adopted || m.Name == got.Status.SandboxName
	}
	if !adopted {
		t.Errorf("claim bound %s, not one of the ready members %v", got.Status.SandboxName, names(members))
	}
	sb := &v1alpha1.Sandbox{}
	if err := env.Get(sb, ns, got.Status.SandboxName); err != nil {
		t.Fatal(err)
	}
	if _, inPool := sb.Labels[v1alpha1.LabelPool]; inPool || sb.Labels[v1alpha1.LabelClaim] != "job-1" || sb.Labels["team"] != "rl" {
		t.Errorf("sandbox labels = %v", sb.Labels)
	}
	if !metav1.IsControlledBy(sb, got) {
		t.Errorf("claim does not own its sandbox: %v", sb.OwnerReferences)
	}
	if len(sb.Spec.Env) != 1 || sb.Spec.Env[0].Value != "42" {
		t.Errorf("claim env not applied: %v", sb.Spec.Env)
	}
	if sb.Spec.Lifecycle.ShutdownTime == nil || !sb.Spec.Lifecycle.ShutdownTime.Equal(&at) {
		t.Errorf("shutdown time = %v, want %v", sb.Spec.Lifecycle.ShutdownTime, at)
	}
	// The pool refills behind the claim.
	waitPoolReady(t, ns, "pool", 2, "")
}

func TestConcurrentClaimsNeverShareAMember(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 5))
	waitPoolReady(t, ns, "pool", 5, "")

	const n = 12 // more claims than members: some adopt, the rest go cold
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := env.Client.Create(ctx, makeClaim(ns, fmt.Sprintf("c%d", i), "py")); err != nil {
				t.Errorf("create claim: %v", err)
			}
		}(i)
	}
	wg.Wait()
	seen := map[string]string{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("c%d", i)
		c := waitClaimReady(t, ns, name)
		if other, dup := seen[c.Status.SandboxName]; dup {
			t.Errorf("claims %s and %s share sandbox %s", other, name, c.Status.SandboxName)
		}
		seen[c.Status.SandboxName] = name
		sb := &v1alpha1.Sandbox{}
		if err := env.Get(sb, ns, c.Status.SandboxName); err != nil {
			t.Fatal(err)
		}
		if sb.Labels[v1alpha1.LabelClaim] != name {
			t.Errorf("sandbox %s is labelled for claim %q, want %q", sb.Name, sb.Labels[v1alpha1.LabelClaim], name)
		}
	}
}

func TestClaimColdWhenPoolEmpty(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makeClaim(ns, "cold", "py"))
	c := waitClaimReady(t, ns, "cold")
	if c.Status.Warm {
		t.Errorf("claim without a pool reported warm")
	}
	if c.Status.SandboxName != "cold" {
		t.Errorf("cold sandbox = %q, want it named after the claim", c.Status.SandboxName)
	}
	waitSandbox(t, ns, "cold", "running", phaseIs(v1alpha1.SandboxRunning))
}

func TestClaimDeletionReleasesSandbox(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 1))
	waitPoolReady(t, ns, "pool", 1, "")
	create(t, makeClaim(ns, "tmp", "py"))
	c := waitClaimReady(t, ns, "tmp")
	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &v1alpha1.Sandbox{}, ns, c.Status.SandboxName)
}

func TestClaimTemplateMissingIsReported(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeClaim(ns, "lost", "nope"))
	c := &v1alpha1.SandboxClaim{}
	harness.Eventually(t, harness.Timeout, "claim reports missing template", func() (bool, string) {
		_ = env.Get(c, ns, "lost")
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
		return cond != nil && cond.Reason == v1alpha1.ReasonTemplateNotFound, fmt.Sprintf("%+v", c.Status)
	})
}

func names(sbs []v1alpha1.Sandbox) []string {
	out := make([]string, len(sbs))
	for i := range sbs {
		out[i] = sbs[i].Name
	}
	return out
}
