package sandbox

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxsnapshots,verbs=get;list;watch

// snapshotUnusable says a sandbox's snapshot is missing or failed: the
// sandbox reports it (and looks again later) instead of making empty volumes.
type snapshotUnusable struct{ msg string }

func (e *snapshotUnusable) Error() string { return e.msg }

func isSnapshotUnusable(err error) bool {
	var s *snapshotUnusable
	return errors.As(err, &s)
}

// snapshotOf reads the SandboxSnapshot a sandbox is made from. It says
// what the sandbox waits for while the snapshot has no VolumeSnapshots yet
// (a fork asked for right after the snapshot), and refuses a snapshot that
// is missing or failed.
func (r *Reconciler) snapshotOf(ctx context.Context, sb *v1alpha1.Sandbox) (*v1alpha1.SandboxSnapshot, string, error) {
	ref := sb.Spec.SnapshotRef
	if ref == nil || len(sb.Spec.VolumeClaimTemplates) == 0 {
		return nil, "", nil
	}
	snap := &v1alpha1.SandboxSnapshot{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: ref.Name}, snap)
	if apierrors.IsNotFound(err) {
		return nil, "", &snapshotUnusable{fmt.Sprintf("snapshot %q not found: its volumes cannot be made", ref.Name)}
	}
	if err != nil {
		return nil, "", err
	}
	switch {
	case snap.Status.Phase == v1alpha1.SnapshotFailed:
		return nil, "", &snapshotUnusable{fmt.Sprintf("snapshot %q failed: %s", ref.Name, snap.Status.Message)}
	case len(snap.Status.Volumes) == 0:
		return nil, fmt.Sprintf("waiting for snapshot %q to be taken", ref.Name), nil
	}
	return snap, "", nil
}

// restore replaces the pod and the PVCs of a sandbox whose restore mark
// changed (lifecycle.DecideRestore), one step per pass; it says what the
// sandbox waits for while it does. The PVCs keep their names, so the new
// pod mounts the same claims, now made from the snapshot.
func (r *Reconciler) restore(ctx context.Context, sb *v1alpha1.Sandbox, pod *corev1.Pod, ev *eventQueue) (string, error) {
	if sb.Spec.SnapshotRef == nil || len(sb.Spec.VolumeClaimTemplates) == 0 {
		return "", nil
	}
	want := lifecycle.RestoreMark(sb)
	var marks []lifecycle.PVCMark
	var stale []*corev1.PersistentVolumeClaim
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		pvc := &corev1.PersistentVolumeClaim{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: PVCName(vct.Name, sb.Name)}, pvc)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		if !isOwnedBy(pvc.OwnerReferences, sb) {
			continue // ensureChildren reports the conflict
		}
		m := lifecycle.PVCMark{Mark: pvc.Annotations[v1alpha1.AnnotationRestore], Deleting: pvc.DeletionTimestamp != nil}
		marks = append(marks, m)
		if m.Mark != want && !m.Deleting {
			stale = append(stale, pvc)
		}
	}
	msg := fmt.Sprintf("restoring volumes from snapshot %q", sb.Spec.SnapshotRef.Name)
	switch lifecycle.DecideRestore(want, marks, pod != nil) {
	case lifecycle.RestoreNone:
		return "", nil
	case lifecycle.RestoreStopPod:
		if pod.DeletionTimestamp == nil {
			if err := r.deletePod(ctx, pod); err != nil {
				return "", fmt.Errorf("delete pod for restore: %w", err)
			}
			ev.add(sb, corev1.EventTypeNormal, v1alpha1.ReasonRestoring, "deleted pod "+pod.Name+" to restore snapshot "+sb.Spec.SnapshotRef.Name)
		}
	case lifecycle.RestoreDeleteVolumes:
		for _, pvc := range stale {
			if err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); ignoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return "", fmt.Errorf("delete PVC %s for restore: %w", pvc.Name, err)
			}
		}
	}
	return msg, nil
}

// waitingReason is the Ready condition's reason while a sandbox waits on
// its snapshot.
func waitingReason(_ *v1alpha1.Sandbox, snap *v1alpha1.SandboxSnapshot) string {
	if snap == nil {
		return v1alpha1.ReasonSnapshotPending
	}
	return v1alpha1.ReasonRestoring
}
