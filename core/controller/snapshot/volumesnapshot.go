package snapshot

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// The CSI snapshot API (external-snapshotter's CRDs) is read and written as
// unstructured objects, straight from the API server: sandpod does not link
// the external-snapshotter's client, so the controller starts and serves
// everything else on a cluster without them, and a SandboxSnapshot there
// fails with a message that says what to install. Where the API is served
// when the controller starts, its VolumeSnapshots' metadata is watched
// (watch.go) to wake their SandboxSnapshot; elsewhere it polls.

// SnapshotGroup is the API group of CSI volume snapshots.
const SnapshotGroup = "snapshot.storage.k8s.io"

var (
	volumeSnapshotGVK        = schema.GroupVersionKind{Group: SnapshotGroup, Version: "v1", Kind: "VolumeSnapshot"}
	volumeSnapshotContentGVK = schema.GroupVersionKind{Group: SnapshotGroup, Version: "v1", Kind: "VolumeSnapshotContent"}
)

// BuildVolumeSnapshot is the VolumeSnapshot of one PVC of the source,
// owned by the SandboxSnapshot (so it goes with it).
func BuildVolumeSnapshot(snap *v1alpha1.SandboxSnapshot, volume, pvc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(volumeSnapshotGVK)
	u.SetNamespace(snap.Namespace)
	u.SetName(v1alpha1.VolumeSnapshotName(snap.Name, volume))
	u.SetLabels(map[string]string{v1alpha1.LabelSnapshot: snap.Name})
	t := true
	u.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxSnapshot",
		Name: snap.Name, UID: snap.UID, Controller: &t, BlockOwnerDeletion: &t,
	}})
	spec := map[string]any{"source": map[string]any{"persistentVolumeClaimName": pvc}}
	if snap.Spec.VolumeSnapshotClassName != nil {
		spec["volumeSnapshotClassName"] = *snap.Spec.VolumeSnapshotClassName
	}
	u.Object["spec"] = spec
	return u
}

// volumeSnapshotOf reads one VolumeSnapshot: its state, its restore size
// and the VolumeSnapshotContent it is bound to.
// owned says the SandboxSnapshot of that uid controls it: a VolumeSnapshot
// someone else made under the same name is never used or deleted.
func volumeSnapshotOf(ctx context.Context, c client.Reader, ns, name string, uid types.UID) (lifecycle.VolumeSnapshotState, *resource.Quantity, string, bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(volumeSnapshotGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return lifecycle.VolumeSnapshotState{}, nil, "", false, err
	}
	st := lifecycle.VolumeSnapshotState{Exists: true}
	st.ReadyToUse, _, _ = unstructured.NestedBool(u.Object, "status", "readyToUse")
	st.Error, _, _ = unstructured.NestedString(u.Object, "status", "error", "message")
	var size *resource.Quantity
	if s, ok, _ := unstructured.NestedString(u.Object, "status", "restoreSize"); ok {
		if q, err := resource.ParseQuantity(s); err == nil {
			size = &q
		}
	}
	content, _, _ := unstructured.NestedString(u.Object, "status", "boundVolumeSnapshotContentName")
	owned := false
	for _, ref := range u.GetOwnerReferences() {
		if ref.Kind == "SandboxSnapshot" && ref.UID == uid && ref.Controller != nil && *ref.Controller {
			owned = true
		}
	}
	return st, size, content, owned, nil
}

// driverOf is the CSI driver of a VolumeSnapshotContent ("" if unknown).
func driverOf(ctx context.Context, c client.Reader, content string) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(volumeSnapshotContentGVK)
	if content == "" || c.Get(ctx, client.ObjectKey{Name: content}, u) != nil {
		return ""
	}
	d, _, _ := unstructured.NestedString(u.Object, "spec", "driver")
	return d
}

// isAPIMissing says the snapshot API is not installed in the cluster.
func isAPIMissing(err error) bool { return meta.IsNoMatchError(err) }
