package engine

import (
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// poolMember is an unclaimed member as the pool plan and claims see it.
// Ready asks for the phase, not only the workload: a member stopped while
// its agent still answers (suspended, expired) must not be handed out. A
// member that can no longer serve a claim is Failed, so its pool deletes it
// and makes a new one (lifecycle.ReplaceMember). Callers hold e.mu.
func poolMember(sb *sandbox) lifecycle.PoolMember {
	phase := sb.phase()
	return lifecycle.PoolMember{
		Name:         sb.rec.Name,
		Ready:        phase == v1alpha1.SandboxRunning && sb.proc != nil,
		Failed:       lifecycle.ReplaceMember(phase),
		TemplateHash: sb.rec.Spec.Hash,
		Created:      sb.rec.Created,
	}
}
