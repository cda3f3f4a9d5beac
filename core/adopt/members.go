package adopt

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// IsMember says whether a sandbox is an unclaimed, live member of pool.
func IsMember(sb *v1alpha1.Sandbox, pool string) bool {
	_, claimed := sb.Labels[v1alpha1.LabelClaim]
	return sb.DeletionTimestamp == nil && !claimed && sb.Labels[v1alpha1.LabelPool] == pool
}

// Pooled says whether a sandbox waits in a warm pool, unclaimed (of any
// pool: Index files it under its template).
func Pooled(sb *v1alpha1.Sandbox) bool {
	_, pooled := sb.Labels[v1alpha1.LabelPool]
	_, claimed := sb.Labels[v1alpha1.LabelClaim]
	return pooled && !claimed
}

// ToPoolMember is the backend-neutral view of a member. A member that can
// no longer serve a claim (failed, suspended or expired, even if only its
// spec says so yet) is Failed: the pool deletes it and makes a new one, and
// no claim takes it (lifecycle.ReplaceMember).
func ToPoolMember(sb *v1alpha1.Sandbox) lifecycle.PoolMember {
	stopping := sb.Spec.OperatingMode == v1alpha1.OperatingModeSuspended
	return lifecycle.PoolMember{
		Name:         sb.Name,
		Ready:        sb.Status.Phase == v1alpha1.SandboxRunning && !stopping,
		Failed:       lifecycle.ReplaceMember(sb.Status.Phase) || stopping,
		TemplateHash: sb.Labels[v1alpha1.LabelTemplateHash],
		Created:      sb.CreationTimestamp.Time,
	}
}

// NewMember is a new member of pool made from template t with hash (the
// warm pool reconciler makes them; kept here beside IsMember, which must
// recognise what it makes).
func NewMember(pool *v1alpha1.SandboxWarmPool, t *v1alpha1.SandboxTemplate, hash string) *v1alpha1.Sandbox {
	truth := true
	sb := &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: pool.Name + "-",
			Namespace:    pool.Namespace,
			Labels: map[string]string{
				v1alpha1.LabelPool:         pool.Name,
				v1alpha1.LabelTemplate:     t.Name,
				v1alpha1.LabelTemplateHash: hash,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxWarmPool",
				Name: pool.Name, UID: pool.UID, Controller: &truth, BlockOwnerDeletion: &truth,
			}},
		},
		Spec: lifecycle.SandboxSpecFromTemplate(t.Name, &t.Spec),
	}
	// A pool of forks: each member's volumes start from the snapshot, and
	// the label files it where a claim from that snapshot looks.
	if pool.Spec.Snapshot != "" {
		sb.Spec.SnapshotRef = &v1alpha1.SnapshotRef{Name: pool.Spec.Snapshot}
		sb.Labels[v1alpha1.LabelSnapshot] = pool.Spec.Snapshot
	}
	return sb
}
