package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// restartHistory is what the sandbox's status remembers of its replaced pods.
func restartHistory(sb *v1alpha1.Sandbox) lifecycle.RestartHistory {
	h := lifecycle.RestartHistory{Streak: sb.Status.PodRestartStreak}
	if t := sb.Status.LastPodRestartTime; t != nil {
		h.Last = t.Time
	}
	return h
}

// ranFor is how long a failed pod ran: from its start to its last container's
// end (now when the pod does not say, e.g. evicted).
func ranFor(pod *corev1.Pod, now time.Time) time.Duration {
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	end := time.Time{}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(end) {
			end = t.FinishedAt.Time
		}
	}
	if end.IsZero() {
		end = now
	}
	return end.Sub(start)
}

// completedPod says whether the sandbox's pod exited 0 (phase Succeeded)
// and the sandbox does not restart: it is then suspended, not Failed. A pod
// being deleted is not a completion: the pod of a suspend often ends with
// exit 0 on its SIGTERM, after the sandbox was resumed already (the e2e
// suspend/resume test caught that resume being undone).
func completedPod(sb *v1alpha1.Sandbox, pod *corev1.Pod, expiry lifecycle.ExpiryAction) bool {
	return pod != nil && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodSucceeded && !sb.Spec.RestartOnFailure &&
		mode(sb) == v1alpha1.OperatingModeRunning && expiry == lifecycle.ExpiryNone
}

// suspendCompleted sets operatingMode Suspended, with the completed mark,
// on a sandbox whose pod exited 0 without restartOnFailure: a spec change,
// like the idle suspend, so resume (or an exec, where the template
// auto-resumes) starts it again.
func (r *Reconciler) suspendCompleted(ctx context.Context, sb *v1alpha1.Sandbox, pod *corev1.Pod, expiry lifecycle.ExpiryAction) (bool, error) {
	if !completedPod(sb, pod, expiry) {
		return false, nil
	}
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.AnnotationCompleted + `":"true","` + v1alpha1.AnnotationExposedPorts + `":null}},"spec":{"operatingMode":"Suspended"}}`)
	if err := r.Client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, fmt.Errorf("suspend completed: %w", err)
	}
	return true, nil
}
