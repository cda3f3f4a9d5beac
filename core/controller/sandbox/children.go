package sandbox

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// BuildService is the headless Service that gives a sandbox a stable DNS name.
func BuildService(sb *v1alpha1.Sandbox) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: sb.Name, Namespace: sb.Namespace, Labels: ChildLabels(sb),
			OwnerReferences: []metav1.OwnerReference{OwnerRef(sb)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{v1alpha1.LabelSandbox: sb.Name},
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{
				Name: v1alpha1.AgentPortName, Port: v1alpha1.AgentPort,
				TargetPort: intstr.FromInt32(v1alpha1.AgentPort), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// BuildPVCs are the PVCs of a sandbox's volume claim templates. They are
// owned by the sandbox, so they outlive its pod and go with the sandbox.
// For a sandbox made from (or restored to) a snapshot, each PVC whose
// volume the snapshot holds starts from its VolumeSnapshot (dataSource),
// at least as large as the snapshot, and carries the sandbox's restore mark.
func BuildPVCs(sb *v1alpha1.Sandbox, snap *v1alpha1.SandboxSnapshot) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		labels := ChildLabels(sb)
		for k, v := range vct.Labels {
			labels[k] = v
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: PVCName(vct.Name, sb.Name), Namespace: sb.Namespace,
				Labels: labels, Annotations: vct.Annotations,
				OwnerReferences: []metav1.OwnerReference{OwnerRef(sb)},
			},
			Spec: *vct.Spec.DeepCopy(),
		}
		if snap != nil {
			fromSnapshot(pvc, vct.Name, snap, lifecycle.RestoreMark(sb))
		}
		out = append(out, pvc)
	}
	return out
}

// fromSnapshot makes pvc start from the snapshot's VolumeSnapshot of volume.
func fromSnapshot(pvc *corev1.PersistentVolumeClaim, volume string, snap *v1alpha1.SandboxSnapshot, mark string) {
	ann := map[string]string{v1alpha1.AnnotationRestore: mark}
	for k, v := range pvc.Annotations {
		ann[k] = v
	}
	pvc.Annotations = ann
	pvc.Labels[v1alpha1.LabelSnapshot] = snap.Name
	for _, v := range snap.Status.Volumes {
		if v.Name != volume {
			continue
		}
		group := snapshotGroup
		pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: v.VolumeSnapshot}
		pvc.Spec.DataSourceRef = nil
		want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if q := lifecycle.RestoreRequest(&want, v.RestoreSize); q != nil && !q.IsZero() {
			if pvc.Spec.Resources.Requests == nil {
				pvc.Spec.Resources.Requests = corev1.ResourceList{}
			}
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = *q
		}
	}
}

// snapshotGroup is the API group of CSI VolumeSnapshots.
const snapshotGroup = "snapshot.storage.k8s.io"

func ptrTo[T any](v T) *T { return &v }
