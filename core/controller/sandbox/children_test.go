package sandbox

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// A sandbox made from a snapshot gets PVCs whose dataSource is the
// snapshot's VolumeSnapshot of the same volume, at least the snapshot's
// restore size, marked with the sandbox's restore mark; a volume the
// snapshot does not hold starts empty; without a snapshot, nothing changes.
func TestBuildPVCsFromSnapshot(t *testing.T) {
	vct := func(name, size string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			}},
		}
	}
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "fork", Namespace: "ns", UID: "u"}}
	sb.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{vct("workspace", "1Gi"), vct("scratch", "1Gi")}
	size := resource.MustParse("2Gi")
	snap := &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	snap.Status.Volumes = []v1alpha1.SnapshotVolume{{Name: "workspace", VolumeSnapshot: "s-workspace", RestoreSize: &size}}

	if pvcs := BuildPVCs(sb, nil); pvcs[0].Spec.DataSource != nil || pvcs[0].Annotations[v1alpha1.AnnotationRestore] != "" {
		t.Fatalf("without a snapshot: %+v", pvcs[0])
	}
	sb.Spec.SnapshotRef = &v1alpha1.SnapshotRef{Name: "s", Restore: "r1"}
	pvcs := BuildPVCs(sb, snap)
	ws, scratch := pvcs[0], pvcs[1]
	ds := ws.Spec.DataSource
	if ds == nil || ds.Kind != "VolumeSnapshot" || ds.Name != "s-workspace" || ds.APIGroup == nil || *ds.APIGroup != "snapshot.storage.k8s.io" {
		t.Errorf("workspace dataSource: %+v", ds)
	}
	if got := ws.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(size) != 0 {
		t.Errorf("workspace request %s, want the restore size %s", got.String(), size.String())
	}
	if ws.Name != "workspace-fork" || ws.Annotations[v1alpha1.AnnotationRestore] != "r1" || ws.Labels[v1alpha1.LabelSnapshot] != "s" {
		t.Errorf("workspace PVC meta: %+v", ws.ObjectMeta)
	}
	if scratch.Spec.DataSource != nil {
		t.Errorf("a volume the snapshot does not hold must start empty: %+v", scratch.Spec.DataSource)
	}
	if sb.Spec.VolumeClaimTemplates[0].Spec.DataSource != nil {
		t.Error("BuildPVCs changed the sandbox's own claim template")
	}
}
