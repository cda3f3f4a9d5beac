package adopt

import (
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// IsMember says whether a sandbox is an unclaimed, live member of pool.
func IsMember(sb *v1alpha1.Sandbox, pool string) bool {
	_, claimed := sb.Labels[v1alpha1.LabelClaim]
	return sb.DeletionTimestamp == nil && !claimed && sb.Labels[v1alpha1.LabelPool] == pool
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
