package snapshot

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// VolumeSnapshotServed says whether the cluster serves the CSI snapshot
// API (snapshot.storage.k8s.io/v1 VolumeSnapshot), asked once, at start:
// only then can the controller watch VolumeSnapshots. A cluster without
// the external-snapshotter's CRDs answers a no-match; any other error (the
// API server not answering discovery) is returned, and the caller polls.
func VolumeSnapshotServed(m meta.RESTMapper) (bool, error) {
	_, err := m.RESTMapping(volumeSnapshotGVK.GroupKind(), volumeSnapshotGVK.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

// WatchVolumeSnapshots makes b's controller wake a SandboxSnapshot on every
// change of a VolumeSnapshot it made: the metadata of VolumeSnapshots is
// watched (each status change, readyToUse among them, is a new
// resourceVersion, so an event), and mapped to their controlling
// SandboxSnapshot. Only the metadata is cached; the reconciler still reads
// the VolumeSnapshot itself from the API server.
func WatchVolumeSnapshots(b *builder.Builder) *builder.Builder {
	vs := &metav1.PartialObjectMetadata{}
	vs.SetGroupVersionKind(volumeSnapshotGVK)
	return b.WatchesMetadata(vs, handler.EnqueueRequestsFromMapFunc(OwnerOfVolumeSnapshot))
}

// OwnerOfVolumeSnapshot maps a VolumeSnapshot to the SandboxSnapshot that
// controls it; others' VolumeSnapshots map to nothing.
func OwnerOfVolumeSnapshot(_ context.Context, o client.Object) []reconcile.Request {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "SandboxSnapshot" || ref.APIVersion != v1alpha1.GroupVersion.String() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
}
