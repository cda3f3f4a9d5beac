package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestWarmPoolServesClaimWithRunningAgent(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 1))
	env.WaitPoolReady(t, ns, "python", 1)

	c, sb := env.Claim(t, ns, "job", "python")
	if !c.Status.Warm {
		t.Errorf("claim was served cold with a ready pool member: %+v", c.Status)
	}
	res, err := env.Agent(t, sb).Shell(Context(t), `python3 -c 'print("warm")'`)
	if err != nil || res.ExitCode != 0 || res.Stdout != "warm\n" {
		t.Errorf("exec in the claimed sandbox = %+v, %v", res, err)
	}
	// The pool makes up for the member it gave away.
	env.WaitPoolReady(t, ns, "python", 1)
}

// A sandbox's volume (a PVC bound to one of the node bed's hostPath PVs)
// keeps its files while the sandbox is suspended (pod deleted) and resumed
// (a new pod).
func TestVolumeSurvivesSuspendAndResume(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, WithVolume(Template(ns, "python-data", PythonImage), "data", "/data"))
	_, sb := env.Claim(t, ns, "job", "python-data")
	ctx := Context(t)

	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + sb.Name}, pvc); err != nil {
		t.Fatalf("pvc: %v", err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != TestbedStorageClass {
		t.Errorf("pvc = phase %s class %v, want Bound to a %s PV", pvc.Status.Phase, pvc.Spec.StorageClassName, TestbedStorageClass)
	}
	oldPod := env.Pod(t, sb)
	res, err := env.Agent(t, sb).Shell(ctx, "echo kept > /data/note && cat /data/note")
	if err != nil || res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("write to the volume = %+v, %v", res, err)
	}

	setMode(t, env, ns, sb.Name, v1alpha1.OperatingModeSuspended)
	env.Eventually(t, "sandbox suspended and its pod gone", func() (bool, string) {
		got := &v1alpha1.Sandbox{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sb.Name}, got); err != nil {
			return false, err.Error()
		}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: oldPod.Name}, &corev1.Pod{})
		return got.Status.Phase == v1alpha1.SandboxSuspended && err != nil, "phase=" + string(got.Status.Phase)
	})
	setMode(t, env, ns, sb.Name, v1alpha1.OperatingModeRunning)
	sb = env.WaitSandboxReady(t, ns, sb.Name)
	if pod := env.Pod(t, sb); pod.UID == oldPod.UID {
		t.Fatalf("resumed sandbox kept its old pod")
	}
	res, err = env.Agent(t, sb).Shell(ctx, "cat /data/note")
	if err != nil || res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Errorf("after resume, the volume holds %+v, %v; want \"kept\"", res, err)
	}
}

func setMode(t *testing.T, env *Env, ns, name string, mode v1alpha1.OperatingMode) {
	t.Helper()
	patch := []byte(`{"spec":{"operatingMode":"` + string(mode) + `"}}`)
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Patch(context.Background(), sb, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("set %s %s: %v", name, mode, err)
	}
}
