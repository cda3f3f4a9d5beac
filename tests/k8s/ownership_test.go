package k8s_test

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// Someone who may create sandboxes (or claims: a cold claim's sandbox has a
// predictable name) must not be able to make the controller mount, hand out
// or change objects it did not make. Each foreign object takes the name of a
// child of a sandbox created after it: the sandbox fails with NameConflict
// naming the object, the object is untouched, no pod mounts it, and once the
// object is gone the sandbox starts.
func TestSandboxLeavesForeignObjectsAlone(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	meta0 := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"owner": "someone-else"}}
	}
	foreignPVC := &corev1.PersistentVolumeClaim{ObjectMeta: meta0("data-victim"), Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	foreignSecret := &corev1.Secret{ObjectMeta: meta0(v1alpha1.SecretName("known")),
		Data: map[string][]byte{v1alpha1.SecretKeyAgent: []byte(strings.Repeat("a", 64))}}
	// Labelled as if it were a sandbox's pod, so the controller's cache holds it.
	foreignPod := &corev1.Pod{ObjectMeta: meta0("squatted"), Spec: podTemplate().Spec}
	foreignPod.Labels = map[string]string{v1alpha1.LabelSandbox: "squatted"}
	create(t, foreignPVC, foreignSecret, foreignPod)
	secretVersion := foreignSecret.ResourceVersion
	create(t, withStorage(makeSandbox(ns, "victim")), makeSandbox(ns, "known"), makeSandbox(ns, "squatted"))

	for _, c := range []struct {
		sandbox, kind, name string
		obj                 clientObject
	}{
		{"victim", "PersistentVolumeClaim", "data-victim", foreignPVC},
		{"squatted", "Pod", "squatted", foreignPod},
	} {
		sb := waitSandbox(t, ns, c.sandbox, "refused with NameConflict", func(sb *v1alpha1.Sandbox) bool {
			cond := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionReady)
			return sb.Status.Phase == v1alpha1.SandboxFailed && cond != nil && cond.Reason == v1alpha1.ReasonNameConflict
		})
		if want := c.kind + ` "` + c.name + `" already exists and is not owned by this sandbox`; !strings.Contains(sb.Status.Message, want) {
			t.Errorf("%s: message %q does not say %q", c.sandbox, sb.Status.Message, want)
		}
		now := c.obj.DeepCopyObject().(clientObject)
		if err := env.Get(now, ns, c.name); err != nil {
			t.Fatalf("%s %s: %v", c.kind, c.name, err)
		}
		// kwok runs the pod (its status changes); nothing else may.
		changed := c.kind != "Pod" && now.GetResourceVersion() != c.obj.GetResourceVersion()
		if changed || len(now.GetOwnerReferences()) != 0 || now.GetDeletionTimestamp() != nil ||
			!reflect.DeepEqual(now.GetAnnotations(), c.obj.GetAnnotations()) || !reflect.DeepEqual(now.GetLabels(), c.obj.GetLabels()) {
			t.Errorf("%s %s was changed: resourceVersion %s → %s, owners %v, deleted %v, labels %v, annotations %v", c.kind, c.name,
				c.obj.GetResourceVersion(), now.GetResourceVersion(), now.GetOwnerReferences(), now.GetDeletionTimestamp(), now.GetLabels(), now.GetAnnotations())
		}
	}
	if err := env.Get(&corev1.Pod{}, ns, "victim"); !isNotFound(err) {
		t.Errorf("sandbox victim has a pod although a child's name is taken (get: %v)", err)
	}
	// A Secret planted under the name earlier controllers gave a sandbox's
	// agent Secret means nothing now: the sandbox runs, its pod mounts no
	// Secret, and the planted one is left as it was.
	waitSandbox(t, ns, "known", "running beside a planted Secret", phaseIs(v1alpha1.SandboxRunning))
	known := &corev1.Pod{}
	if err := env.Get(known, ns, "known"); err != nil {
		t.Fatal(err)
	}
	for _, v := range known.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("pod known mounts Secret %s", v.Secret.SecretName)
		}
	}
	if err := env.Get(foreignSecret, ns, v1alpha1.SecretName("known")); err != nil || foreignSecret.ResourceVersion != secretVersion || len(foreignSecret.OwnerReferences) != 0 {
		t.Errorf("planted Secret changed: %v, resourceVersion %s → %s, owners %v", err, secretVersion, foreignSecret.ResourceVersion, foreignSecret.OwnerReferences)
	}

	// The name freed, the sandbox starts with a PVC of its own. (No
	// controller-manager here removes the pvc-protection finalizer.)
	if err := env.Client.Delete(ctx, foreignPVC); err != nil {
		t.Fatal(err)
	}
	unprotect := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := env.Client.Patch(ctx, foreignPVC, unprotect); err != nil && !isNotFound(err) {
		t.Fatal(err)
	}
	waitGone(t, &corev1.PersistentVolumeClaim{}, ns, "data-victim")
	sb := waitSandbox(t, ns, "victim", "running once the name is free", phaseIs(v1alpha1.SandboxRunning))
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Get(pvc, ns, "data-victim"); err != nil || !metav1.IsControlledBy(pvc, sb) {
		t.Errorf("pvc data-victim after the conflict: err=%v owners=%v", err, pvc.OwnerReferences)
	}
}

// A sandbox made again under the name of one just deleted (a request id
// reused after a delete names its sandbox alike) starts: the children of
// the earlier one, still going away, are not a name conflict. A finalizer
// holds the earlier pod here, as a kubelet stopping it would.
func TestSandboxMadeAgainUnderItsName(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeSandbox(ns, "again"))
	first := waitSandbox(t, ns, "again", "running", phaseIs(v1alpha1.SandboxRunning))
	old := waitPod(t, ns, "again", "made", func(p *corev1.Pod, err error) bool { return err == nil })
	hold := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["sandpod.test/hold"]}}`))
	if err := env.Client.Patch(ctx, old, hold); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &v1alpha1.Sandbox{}, ns, "again")
	create(t, makeSandbox(ns, "again"))
	sb := waitSandbox(t, ns, "again", "observed", func(sb *v1alpha1.Sandbox) bool {
		return sb.UID != first.UID && sb.Status.ObservedGeneration == sb.Generation && sb.Status.Phase != ""
	})
	if sb.Status.Phase == v1alpha1.SandboxFailed {
		t.Fatalf("made again while the earlier pod goes away: %s: %s", sb.Status.Phase, sb.Status.Message)
	}
	release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := env.Client.Patch(ctx, old, release); err != nil && !isNotFound(err) {
		t.Fatal(err)
	}
	sb = waitSandbox(t, ns, "again", "running again", phaseIs(v1alpha1.SandboxRunning))
	waitPod(t, ns, "again", "controlled by the new sandbox", func(p *corev1.Pod, err error) bool {
		return err == nil && metav1.IsControlledBy(p, sb)
	})
}
