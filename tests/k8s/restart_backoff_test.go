package k8s_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

func readyReason(sb *v1alpha1.Sandbox) string {
	if c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// A restartOnFailure sandbox whose pod fails as soon as it runs is replaced
// at once the first time, then only after the back-off (10s for the
// second): meanwhile it is Pending with Ready reason RestartBackOff, not
// Failed, and its status counts the replacements.
func TestRestartOnFailureBacksOff(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	sb := makeSandbox(ns, "crashy")
	sb.Spec.RestartOnFailure = true
	sb.Spec.PodTemplate.Labels[harness.LabelFail] = "true"
	create(t, sb)

	got := waitSandbox(t, ns, "crashy", "backing off after its first replacement", func(sb *v1alpha1.Sandbox) bool {
		return sb.Status.PodRestarts == 1 && readyReason(sb) == v1alpha1.ReasonRestartBackOff
	})
	first := got.Status.LastPodRestartTime.Time
	if got.Status.Phase != v1alpha1.SandboxPending || got.Status.PodRestartStreak != 1 {
		t.Errorf("backing off: phase %s streak %d, want Pending 1", got.Status.Phase, got.Status.PodRestartStreak)
	}
	// The failed pod waits for its replacement: until the back-off from
	// the first replacement ends (less a margin for the status time's
	// second precision) it is the same pod and nothing is counted. Without
	// the back-off it was replaced again and again. The window is the
	// back-off's, not a fixed time from whenever a loaded machine gets here.
	pod := &corev1.Pod{}
	if err := env.Get(pod, ns, "crashy"); err != nil {
		t.Fatal(err)
	}
	for end := first.Add(lifecycle.RestartBackoffBase - 2*time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		now := &corev1.Pod{}
		if err := env.Get(now, ns, "crashy"); err != nil || now.UID != pod.UID {
			t.Fatalf("the failed pod went during the back-off (err %v)", err)
		}
	}
	second := waitSandbox(t, ns, "crashy", "replaced again after the back-off", func(sb *v1alpha1.Sandbox) bool {
		return sb.Status.PodRestarts == 2
	})
	// Status times have second precision.
	if gap := second.Status.LastPodRestartTime.Sub(first); gap < lifecycle.RestartBackoffBase-time.Second {
		t.Errorf("second replacement %s after the first, want at least %s", gap, lifecycle.RestartBackoffBase)
	}
	if second.Status.PodRestartStreak != 2 {
		t.Errorf("streak %d, want 2", second.Status.PodRestartStreak)
	}
}

// setPodPhase writes a pod's phase as a kubelet would (kwok leaves a
// Running pod alone).
func setPodPhase(t *testing.T, ns, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	pod := waitPod(t, ns, name, "running", func(p *corev1.Pod, err error) bool {
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	pod.Status.Phase = phase
	pod.Status.Conditions = nil
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// A sandbox whose pod exited 0 is not Failed: without restartOnFailure it
// is suspended (Suspended reason Completed) and resuming it makes a new pod;
// with restartOnFailure its pod is replaced like a failed one.
func TestSandboxPodSucceeded(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	plain, restart := makeSandbox(ns, "done"), makeSandbox(ns, "again")
	restart.Spec.RestartOnFailure = true
	create(t, plain, restart)

	old := setPodPhase(t, ns, "done", corev1.PodSucceeded)
	sb := waitSandbox(t, ns, "done", "suspended as completed", func(sb *v1alpha1.Sandbox) bool {
		c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionSuspended)
		return phaseIs(v1alpha1.SandboxSuspended)(sb) && c != nil && c.Reason == v1alpha1.ReasonCompleted
	})
	if sb.Spec.OperatingMode != v1alpha1.OperatingModeSuspended || sb.Annotations[v1alpha1.AnnotationCompleted] != "true" {
		t.Errorf("completed: operatingMode %q, annotation %q", sb.Spec.OperatingMode, sb.Annotations[v1alpha1.AnnotationCompleted])
	}
	waitPod(t, ns, "done", "deleted", func(p *corev1.Pod, err error) bool { return isNotFound(err) || p.UID != old.UID })
	patch := []byte(`{"spec":{"operatingMode":"Running"}}`)
	if err := env.Client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "done", "made again on resume", func(p *corev1.Pod, err error) bool { return err == nil && p.UID != old.UID })
	waitSandbox(t, ns, "done", "running without the completed mark", func(sb *v1alpha1.Sandbox) bool {
		return phaseIs(v1alpha1.SandboxRunning)(sb) && sb.Annotations[v1alpha1.AnnotationCompleted] == ""
	})

	old = setPodPhase(t, ns, "again", corev1.PodSucceeded)
	waitPod(t, ns, "again", "replaced", func(p *corev1.Pod, err error) bool { return err == nil && p.UID != old.UID })
	sb = waitSandbox(t, ns, "again", "running again", phaseIs(v1alpha1.SandboxRunning))
	if sb.Status.PodRestarts != 1 || sb.Spec.OperatingMode == v1alpha1.OperatingModeSuspended {
		t.Errorf("restartOnFailure, exited 0: podRestarts %d, operatingMode %q; want 1, not suspended", sb.Status.PodRestarts, sb.Spec.OperatingMode)
	}
}

// The pod of a suspend often ends with exit 0 (its SIGTERM) while it goes
// away, after the sandbox was resumed already: that is no completion, and
// the resume stands (the e2e suspend/resume test caught it undone). A
// finalizer holds the pod here as a kubelet's grace period would.
func TestResumeNotUndoneByPodEndingOnSuspend(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeSandbox(ns, "sus"))
	pod := waitPod(t, ns, "sus", "running", func(p *corev1.Pod, err error) bool {
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	const fin = "sandpod.test/hold"
	hold := []byte(`{"metadata":{"finalizers":["` + fin + `"]}}`)
	if err := env.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, hold)); err != nil {
		t.Fatal(err)
	}
	release := func() {
		p := &corev1.Pod{}
		if err := env.Get(p, ns, "sus"); err == nil && p.UID == pod.UID {
			_ = env.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}
	}
	t.Cleanup(release)
	sb := waitSandbox(t, ns, "sus", "running", phaseIs(v1alpha1.SandboxRunning))
	if err := env.Client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"operatingMode":"Suspended"}}`))); err != nil {
		t.Fatal(err)
	}
	pod = waitPod(t, ns, "sus", "being deleted", func(p *corev1.Pod, err error) bool { return err == nil && p.DeletionTimestamp != nil })
	if err := env.Client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"operatingMode":"Running"}}`))); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase, pod.Status.Conditions = corev1.PodSucceeded, nil
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// A few passes of the controller see the ended pod; the resume stands.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		got := &v1alpha1.Sandbox{}
		if err := env.Get(got, ns, "sus"); err != nil {
			t.Fatal(err)
		}
		if got.Spec.OperatingMode != v1alpha1.OperatingModeRunning || got.Annotations[v1alpha1.AnnotationCompleted] != "" {
			t.Fatalf("resume undone: operatingMode %q, completed mark %q", got.Spec.OperatingMode, got.Annotations[v1alpha1.AnnotationCompleted])
		}
	}
	release()
	waitPod(t, ns, "sus", "made again", func(p *corev1.Pod, err error) bool { return err == nil && p.UID != pod.UID })
	waitSandbox(t, ns, "sus", "running again", phaseIs(v1alpha1.SandboxRunning))
}
