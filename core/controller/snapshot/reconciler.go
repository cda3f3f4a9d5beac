// Package snapshot reconciles SandboxSnapshots: one CSI VolumeSnapshot per
// volume of the source sandbox, a status that mirrors them, and a finalizer
// that keeps the snapshot while a sandbox or warm pool uses it.
package snapshot

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/api/fieldindex"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/sandbox"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/core/patch"
)

// Reasons of a SandboxSnapshot's Ready condition.
const (
	ReasonSnapshotReady   = "Ready"
	ReasonSnapshotPending = "Pending"
	ReasonSnapshotFailed  = "Failed"
	ReasonInUse           = "InUse"
)

// PollRecheck is how often a snapshot being taken looks at its
// VolumeSnapshots when they cannot be watched (a cluster without the CSI
// snapshot CRDs when the controller started), and how often it looks for
// its source's PVCs, which do not wake it.
const PollRecheck = 2 * time.Second

// WatchRecheck is the safety requeue of a snapshot being taken while its
// VolumeSnapshots are watched: each change of one wakes it (Watching).
const WatchRecheck = time.Minute

// Reconciler keeps each SandboxSnapshot's VolumeSnapshots and status.
type Reconciler struct {
	// Client reads sandpod's objects from the cache; VolumeSnapshots,
	// unstructured, go to the API server.
	Client client.Client
	// APIReader reads past the cache (which holds only sandboxes' own,
	// labelled PVCs) to tell a PVC not made yet from someone else's.
	APIReader client.Reader
	Clock     clock.Clock
	// Recheck is how long a snapshot waits for its VolumeSnapshots before
	// it reads them again unwoken (default PollRecheck).
	Recheck time.Duration
}

func (r *Reconciler) recheck() time.Duration {
	if r.Recheck > 0 {
		return r.Recheck
	}
	return PollRecheck
}

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxsnapshots,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxsnapshots/status,verbs=get;patch
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxsnapshots/finalizers,verbs=update
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotcontents,verbs=get

// Reconcile runs one pass: users and finalizer, VolumeSnapshots, status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	snap := &v1alpha1.SandboxSnapshot{}
	if err := r.Client.Get(ctx, req.NamespacedName, snap); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	users, err := fieldindex.SnapshotUsers(ctx, r.Client, snap.Namespace, snap.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	st := *snap.Status.DeepCopy()
	if snap.DeletionTimestamp != nil {
		if len(users) > 0 {
			// Kept: the sandboxes and pools that use it are watched, so the
			// last one going wakes this up.
			setReady(&st, snap, r.Clock.Now(), metav1.ConditionFalse, ReasonInUse, "deletion waits until nothing uses it: "+strings.Join(users, ", "))
			return reconcile.Result{}, r.writeStatus(ctx, snap, st)
		}
		return reconcile.Result{}, r.release(ctx, snap)
	}
	if !controllerutil.ContainsFinalizer(snap, v1alpha1.SnapshotFinalizer) {
		base := snap.DeepCopy()
		controllerutil.AddFinalizer(snap, v1alpha1.SnapshotFinalizer)
		if err := r.Client.Patch(ctx, snap, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if st.Phase == v1alpha1.SnapshotFailed || st.Phase == v1alpha1.SnapshotReady {
		return reconcile.Result{}, nil // settled: a snapshot is taken once
	}
	wait, err := r.take(ctx, snap, &st)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: wait}, r.writeStatus(ctx, snap, st)
}

// take makes the VolumeSnapshots (on the first pass) and reads them back.
func (r *Reconciler) take(ctx context.Context, snap *v1alpha1.SandboxSnapshot, st *v1alpha1.SandboxSnapshotStatus) (time.Duration, error) {
	now := r.Clock.Now()
	fail := func(msg string) (time.Duration, error) {
		st.Phase, st.Message, st.ReadyToUse = v1alpha1.SnapshotFailed, msg, false
		setReady(st, snap, now, metav1.ConditionFalse, ReasonSnapshotFailed, msg)
		return 0, nil
	}
	if len(st.Volumes) == 0 {
		src := &v1alpha1.Sandbox{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: snap.Spec.SourceSandbox}, src)
		if apierrors.IsNotFound(err) {
			return fail(fmt.Sprintf("source sandbox %q not found", snap.Spec.SourceSandbox))
		}
		if err != nil {
			return 0, err
		}
		if len(src.Spec.VolumeClaimTemplates) == 0 {
			return fail(fmt.Sprintf("sandbox %q has no volumes (volumeClaimTemplates) to snapshot: on Kubernetes a snapshot holds a sandbox's volumes; give its template a workspace volume claim template", src.Name))
		}
		if src.Spec.TemplateRef != nil {
			st.Template = src.Spec.TemplateRef.Name
		}
		// Only the sandbox's own PVCs: a sandbox whose claim template
		// names a PVC someone else made (which the sandbox reconciler
		// refuses to use) must not get it snapshotted, and its data forked.
		for _, vct := range src.Spec.VolumeClaimTemplates {
			pvc := &corev1.PersistentVolumeClaim{}
			key := client.ObjectKey{Namespace: src.Namespace, Name: sandbox.PVCName(vct.Name, src.Name)}
			err := r.Client.Get(ctx, key, pvc)
			if apierrors.IsNotFound(err) && r.APIReader != nil {
				err = r.APIReader.Get(ctx, key, pvc)
			}
			if apierrors.IsNotFound(err) {
				st.Phase, st.Message = v1alpha1.SnapshotPending, fmt.Sprintf("waiting for volume %s of sandbox %q to be made", vct.Name, src.Name)
				setReady(st, snap, now, metav1.ConditionFalse, ReasonSnapshotPending, st.Message)
				return PollRecheck, nil
			}
			if err != nil {
				return 0, err
			}
			if !metav1.IsControlledBy(pvc, src) {
				return fail(fmt.Sprintf("PVC %q is not sandbox %q's own: it is not snapshotted", pvc.Name, src.Name))
			}
		}
		for _, vct := range src.Spec.VolumeClaimTemplates {
			vs := BuildVolumeSnapshot(snap, vct.Name, sandbox.PVCName(vct.Name, src.Name))
			if err := r.Client.Create(ctx, vs); err != nil && !apierrors.IsAlreadyExists(err) {
				if isAPIMissing(err) {
					return fail("the CSI snapshot API (snapshot.storage.k8s.io/v1 VolumeSnapshot) is not installed: install the external-snapshotter's CRDs and snapshot-controller, and a CSI driver with snapshot support (docs/install.md)")
				}
				if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
					return fail(fmt.Sprintf("volume %s: %v", vct.Name, err))
				}
				return 0, fmt.Errorf("create VolumeSnapshot: %w", err)
			}
			st.Volumes = append(st.Volumes, v1alpha1.SnapshotVolume{Name: vct.Name, VolumeSnapshot: vs.GetName()})
		}
	}
	states := map[string]lifecycle.VolumeSnapshotState{}
	content := ""
	for i := range st.Volumes {
		v := &st.Volumes[i]
		state, size, c, owned, err := volumeSnapshotOf(ctx, r.Client, snap.Namespace, v.VolumeSnapshot, snap.UID)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, err
		case !owned:
			// A VolumeSnapshot of that name was there before: not ours to use.
			state = lifecycle.VolumeSnapshotState{Exists: true, Error: fmt.Sprintf("VolumeSnapshot %q exists and is not this snapshot's: delete it or name the snapshot otherwise", v.VolumeSnapshot)}
		}
		v.ReadyToUse, v.RestoreSize = state.ReadyToUse, size
		states[v.Name] = state
		if content == "" {
			content = c
		}
	}
	phase, msg := lifecycle.SnapshotPhase(states)
	st.Phase, st.Message, st.ReadyToUse = phase, msg, phase == v1alpha1.SnapshotReady
	switch phase {
	case v1alpha1.SnapshotReady:
		if st.Driver == "" {
			st.Driver = driverOf(ctx, r.Client, content)
		}
		st.ObservedGeneration = snap.Generation
		setReady(st, snap, now, metav1.ConditionTrue, ReasonSnapshotReady, "")
		return 0, nil
	case v1alpha1.SnapshotFailed:
		setReady(st, snap, now, metav1.ConditionFalse, ReasonSnapshotFailed, msg)
		return 0, nil
	}
	setReady(st, snap, now, metav1.ConditionFalse, ReasonSnapshotPending, msg)
	return r.recheck(), nil
}

// release deletes the VolumeSnapshots of a snapshot nothing uses and lets
// it go. Their owner references would take them too, but only where a
// garbage collector runs, and later.
func (r *Reconciler) release(ctx context.Context, snap *v1alpha1.SandboxSnapshot) error {
	for _, v := range snap.Status.Volumes {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(volumeSnapshotGVK)
		u.SetNamespace(snap.Namespace)
		u.SetName(v.VolumeSnapshot)
		_, _, _, owned, err := volumeSnapshotOf(ctx, r.Client, snap.Namespace, v.VolumeSnapshot, snap.UID)
		if err != nil || !owned {
			continue // gone, or not ours
		}
		if err := r.Client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) && !isAPIMissing(err) {
			return fmt.Errorf("delete VolumeSnapshot %s: %w", v.VolumeSnapshot, err)
		}
	}
	if !controllerutil.ContainsFinalizer(snap, v1alpha1.SnapshotFinalizer) {
		return nil
	}
	base := snap.DeepCopy()
	controllerutil.RemoveFinalizer(snap, v1alpha1.SnapshotFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, snap, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}

func setReady(st *v1alpha1.SandboxSnapshotStatus, snap *v1alpha1.SandboxSnapshot, now time.Time, s metav1.ConditionStatus, reason, msg string) {
	lifecycle.SetCondition(&st.Conditions, v1alpha1.ConditionReady, s == metav1.ConditionTrue, reason, msg, snap.Generation, now)
}

func (r *Reconciler) writeStatus(ctx context.Context, snap *v1alpha1.SandboxSnapshot, st v1alpha1.SandboxSnapshotStatus) error {
	if equality.Semantic.DeepEqual(snap.Status, st) {
		return nil
	}
	p, err := patch.Status(snap.Status, st)
	if err != nil {
		return err
	}
	snap.Status = st
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, snap, p))
}
