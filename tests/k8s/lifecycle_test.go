package k8s_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

func TestSandboxIdleAutoSuspend(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	sb := makeSandbox(ns, "idle")
	sb.Spec.Lifecycle.IdleTimeout = &metav1.Duration{Duration: 2 * time.Second}
	// A port preview of the bridge's: the idle suspend closes it.
	sb.Annotations = map[string]string{v1alpha1.AnnotationExposedPorts: `[{"id":"abcd","port":8000,"protocol":"http"}]`}
	create(t, sb)
	got := waitSandbox(t, ns, "idle", "idle-suspended", phaseIs(v1alpha1.SandboxSuspended))
	if got.Spec.OperatingMode != v1alpha1.OperatingModeSuspended {
		t.Errorf("operatingMode = %q, want Suspended", got.Spec.OperatingMode)
	}
	if v, ok := got.Annotations[v1alpha1.AnnotationExposedPorts]; ok {
		t.Errorf("exposed ports still recorded after the idle suspend: %q", v)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSuspended); c == nil || c.Reason != v1alpha1.ReasonIdle {
		t.Errorf("Suspended condition = %+v, want reason Idle", c)
	}
	waitGone(t, &corev1.Pod{}, ns, "idle")
}

func TestSandboxFailedPodReportedOrRestarted(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	reported := makeSandbox(ns, "crash")
	reported.Spec.PodTemplate.Labels[harness.LabelFail] = "true"
	restarted := makeSandbox(ns, "crash-restart")
	restarted.Spec.PodTemplate.Labels[harness.LabelFail] = "true"
	restarted.Spec.RestartOnFailure = true
	create(t, reported, restarted)

	// Without restartOnFailure: reported Failed, pod kept for inspection.
	sb := waitSandbox(t, ns, "crash", "failed", phaseIs(v1alpha1.SandboxFailed))
	if !conditionTrue(sb.Status.Conditions, v1alpha1.ConditionFinished) || sb.Status.Message == "" {
		t.Errorf("failure not reported: %+v", sb.Status)
	}
	if err := env.Get(&corev1.Pod{}, ns, "crash"); err != nil {
		t.Errorf("failed pod should stay: %v", err)
	}

	// With restartOnFailure: the failed pod is replaced by a new one.
	first := waitPod(t, ns, "crash-restart", "created", func(_ *corev1.Pod, err error) bool { return err == nil })
	waitPod(t, ns, "crash-restart", "replaced", func(p *corev1.Pod, err error) bool { return err == nil && p.UID != first.UID })
}

func TestClaimTTLAfterFinished(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	c := makeClaim(ns, "short", "py")
	ttl := int32(1)
	c.Spec.TTLSecondsAfterFinished = &ttl
	create(t, makeTemplate(ns, "py"), c)
	got := waitClaimReady(t, ns, "short")
	// The sandbox ends (here: deleted by someone); the claim finishes and,
	// after its TTL, goes away.
	if err := env.Client.Delete(ctx, &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: got.Status.SandboxName}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &v1alpha1.SandboxClaim{}, ns, "short")
}

func TestSchemaValidation(t *testing.T) {
	harness.Skip(t, env)
	ns := env.Namespace(t)
	bad := map[string]clientObject{
		"reserved claim label": func() clientObject {
			c := makeClaim(ns, "bad1", "py")
			c.Spec.Labels = map[string]v1alpha1.LabelValue{"sandpod.dev/pool": "x"}
			return c
		}(),
		"unknown operating mode": func() clientObject {
			sb := makeSandbox(ns, "bad2")
			sb.Spec.OperatingMode = "Hibernating"
			return sb
		}(),
		"unknown shutdown policy": func() clientObject {
			sb := makeSandbox(ns, "bad3")
			sb.Spec.Lifecycle.ShutdownPolicy = "Archive"
			return sb
		}(),
		"negative replicas":        makePool(ns, "bad4", "py", -1),
		"sandbox name not a label": makeSandbox(ns, "has.dots"),
		"pool name too long":       makePool(ns, "p23456789012345678901234567890123456789012345678901234567890", "py", 1),
	}
	for name, obj := range bad {
		if err := env.Client.Create(ctx, obj); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Immutable template reference.
	c := makeClaim(ns, "fixed", "py")
	create(t, c)
	c.Spec.TemplateRef.Name = "other"
	if err := env.Client.Update(ctx, c); err == nil {
		t.Errorf("claim templateRef change accepted")
	} else {
		t.Logf("rejected as expected: %v", fmt.Sprint(err)[:min(120, len(err.Error()))])
	}
}
