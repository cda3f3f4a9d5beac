package k8s_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	"github.com/sandpod/sandpod/core/controller/sandbox"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

func ensureRuntimeClass(t *testing.T, name string) {
	t.Helper()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runsc"}
	if err := env.Client.Create(ctx, rc); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
}

func TestRuntimeClassRequiredRejects(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{Options: controller.Options{
		RuntimeClass: sandbox.RuntimeClassPolicy{Mode: sandbox.RuntimeClassRequire},
	}})
	ensureRuntimeClass(t, "gvisor")
	bare := makeSandbox(ns, "bare")
	isolated := makeSandbox(ns, "isolated")
	gv := "gvisor"
	isolated.Spec.PodTemplate.Spec.RuntimeClassName = &gv
	create(t, bare, isolated)

	sb := waitSandbox(t, ns, "bare", "refused", func(sb *v1alpha1.Sandbox) bool {
		c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonRuntimeClassMissing && sb.Status.Phase == v1alpha1.SandboxFailed
	})
	if sb.Status.Message == "" {
		t.Errorf("refusal has no message")
	}
	waitSandbox(t, ns, "isolated", "running", phaseIs(v1alpha1.SandboxRunning))
	// The refused one never got a pod.
	time.Sleep(500 * time.Millisecond)
	if err := env.Get(&corev1.Pod{}, ns, "bare"); !isNotFound(err) {
		t.Errorf("refused sandbox has a pod (err=%v)", err)
	}
}

func TestRuntimeClassDefaultApplied(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{Options: controller.Options{
		RuntimeClass: sandbox.RuntimeClassPolicy{Mode: sandbox.RuntimeClassDefault, Default: "gvisor"},
	}})
	ensureRuntimeClass(t, "gvisor")
	create(t, makeSandbox(ns, "dflt"))
	pod := waitPod(t, ns, "dflt", "created", func(_ *corev1.Pod, err error) bool { return err == nil })
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName = %v, want gvisor", pod.Spec.RuntimeClassName)
	}
	waitSandbox(t, ns, "dflt", "running", phaseIs(v1alpha1.SandboxRunning))
}

func TestTemplateRuntimeClassReachesPoolPods(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	ensureRuntimeClass(t, "gvisor")
	tmpl := makeTemplate(ns, "iso")
	gv := "gvisor"
	tmpl.Spec.RuntimeClassName = &gv
	create(t, tmpl, makePool(ns, "pool", "iso", 1))
	ms := waitPoolReady(t, ns, "pool", 1, "")
	pod := &corev1.Pod{}
	if err := env.Get(pod, ns, ms[0].Name); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName = %v", pod.Spec.RuntimeClassName)
	}
}
