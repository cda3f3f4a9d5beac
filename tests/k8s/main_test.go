// Package k8s_test checks sandpod's promises on a real kube-apiserver + etcd,
// with kwok simulating a node, and sandpod's manager running in-process. Each
// test gets its own namespace and its own manager watching only it.
package k8s_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env) }

var ctx = context.Background()

// setup skips without a kwok bed, and otherwise gives the test a namespace
// with a manager watching it.
func setup(t *testing.T, o harness.ManagerOptions) string {
	t.Helper()
	harness.Skip(t, env)
	ns := env.Namespace(t)
	env.StartManager(t, o, ns)
	return ns
}

// --- builders

// The builders the bench shares are the harness's.
var (
	podTemplate  = harness.PodTemplate
	makeTemplate = harness.Template
	makeClaim    = harness.Claim
	makePool     = harness.Pool
)

func makeSandbox(ns, name string) *v1alpha1.Sandbox {
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxSpec{PodTemplate: podTemplate()},
	}
}

func withStorage(sb *v1alpha1.Sandbox) *v1alpha1.Sandbox {
	sb.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	return sb
}

func create(t *testing.T, objs ...clientObject) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// --- waits

func waitSandbox(t *testing.T, ns, name, what string, cond func(*v1alpha1.Sandbox) bool) *v1alpha1.Sandbox {
	t.Helper()
	sb := &v1alpha1.Sandbox{}
	harness.Eventually(t, harness.Timeout, "sandbox "+name+" "+what, func() (bool, string) {
		if err := env.Get(sb, ns, name); err != nil {
			return false, err.Error()
		}
		return cond(sb), fmt.Sprintf("phase=%s conditions=%v", sb.Status.Phase, sb.Status.Conditions)
	})
	return sb
}

func phaseIs(p v1alpha1.SandboxPhase) func(*v1alpha1.Sandbox) bool {
	return func(sb *v1alpha1.Sandbox) bool {
		return sb.Status.Phase == p && sb.Status.ObservedGeneration == sb.Generation
	}
}

func isReady(sb *v1alpha1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady)
}

func waitPod(t *testing.T, ns, name, what string, cond func(*corev1.Pod, error) bool) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	harness.Eventually(t, harness.Timeout, "pod "+name+" "+what, func() (bool, string) {
		err := env.Get(pod, ns, name)
		return cond(pod, err), fmt.Sprintf("err=%v phase=%s", err, pod.Status.Phase)
	})
	return pod
}

func waitGone(t *testing.T, obj clientObject, ns, name string) {
	t.Helper()
	harness.Eventually(t, harness.Timeout, fmt.Sprintf("%T %s to be deleted", obj, name), func() (bool, string) {
		err := env.Get(obj, ns, name)
		return isNotFound(err), fmt.Sprintf("err=%v", err)
	})
}
