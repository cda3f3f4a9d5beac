package sandbox

import (
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Which status writes are worth their cost. Every status patch of a Sandbox
// is a CRD status update in kube-apiserver (decode through the schema,
// apply the merge patch, validate, store, fan out to every watch); in a
// burst of claims the controller's status patch of each adopted member was
// 24% of kube-apiserver's CPU while the claims it competed with waited
// (docs/performance.md). Two writes carry nothing a reader acts on:
//
//   - the one a claim's adoption asks for: the adoption changes the
//     member's spec (env, lifecycle), which bumps its generation, but not
//     anything the status reports, so the pass would write the same status
//     with only observedGeneration moved;
//   - a new warm pool member's Pending: nobody reads an unclaimed member's
//     status but the pool and the claimers, and both take a sandbox without
//     status for a Pending one (adopt.ToPoolMember, the bridge's convert).
//
// Skipping them, a refilled member costs one status write (Running) and an
// adopted one none.

// statusWorthWriting says whether the computed status st should be written
// over sandbox sb's current status.
func statusWorthWriting(sb *v1alpha1.Sandbox, st v1alpha1.SandboxStatus) bool {
	switch {
	case equality.Semantic.DeepEqual(sb.Status, st):
		return false
	case onlyGenerationMoved(sb.Status, st):
		// observedGeneration catches up with the next status that says
		// something: the sandbox's generation moved on a spec change
		// that does not change what it reports.
		return false
	case newMemberPending(sb, st):
		return false
	}
	return true
}

// onlyGenerationMoved says whether next differs from cur only in the
// generation it was computed for (the status's and its conditions').
func onlyGenerationMoved(cur, next v1alpha1.SandboxStatus) bool {
	if cur.ObservedGeneration == 0 || len(cur.Conditions) != len(next.Conditions) {
		return false // never written, or a condition came or went
	}
	n := *next.DeepCopy()
	n.ObservedGeneration = cur.ObservedGeneration
	for i := range n.Conditions {
		if n.Conditions[i].Type != cur.Conditions[i].Type {
			return false
		}
		n.Conditions[i].ObservedGeneration = cur.Conditions[i].ObservedGeneration
	}
	return equality.Semantic.DeepEqual(cur, n)
}

// newMemberPending says whether sb is an unclaimed warm pool member that has
// no status yet and st would only say it is Pending, with nothing to report
// (no message, no refusal). Its first status is then Running (or whatever
// the pod says when it stops being merely Pending).
func newMemberPending(sb *v1alpha1.Sandbox, st v1alpha1.SandboxStatus) bool {
	_, claimed := sb.Labels[v1alpha1.LabelClaim]
	if sb.Labels[v1alpha1.LabelPool] == "" || claimed || sb.Status.Phase != "" || len(sb.Status.Conditions) > 0 {
		return false
	}
	if st.Phase != v1alpha1.SandboxPending || st.Message != "" || st.AgentRestarts != 0 {
		return false
	}
	for _, c := range st.Conditions {
		if c.Message != "" {
			return false
		}
	}
	return true
}

// untrackFirst says whether sb is an unclaimed warm pool member about to get
// its first status, whose managedFields are cleared first (adopt.Untrack):
// then none of its writes (this status, the claim's take, the claimed
// sandbox's later writes) is tracked by kube-apiserver. Right before the
// first status and not right after the create, so the member is never
// seen Ready at a resourceVersion the untrack then moves (a claimer's take
// carrying it would conflict), and its pod is already in the cache when
// the untrack's event arrives.
func untrackFirst(sb *v1alpha1.Sandbox) bool {
	_, claimed := sb.Labels[v1alpha1.LabelClaim]
	return sb.Labels[v1alpha1.LabelPool] != "" && !claimed && sb.DeletionTimestamp == nil &&
		sb.Status.Phase == "" && len(sb.Status.Conditions) == 0
}
