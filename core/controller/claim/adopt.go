package claim

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// ClaimOwnerRef makes a claim the controlling owner of its sandbox.
func ClaimOwnerRef(c *v1alpha1.SandboxClaim) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxClaim",
		Name: c.Name, UID: c.UID, Controller: &t, BlockOwnerDeletion: &t,
	}
}

// Bind rewrites a sandbox as held by claim c at now: it leaves its pool
// (adopt.Take), the claim becomes its controlling owner, and it takes the
// claim's labels, env, lifecycle and restartOnFailure. Applied to a warm member, it is the
// single write of a warm claim.
func Bind(sb *v1alpha1.Sandbox, c *v1alpha1.SandboxClaim, t *v1alpha1.SandboxTemplate, now time.Time) {
	adopt.Take(sb, adopt.Holder{
		Labels:    v1alpha1.LabelMap(c.Spec.Labels),
		Env:       c.Spec.Env,
		Lifecycle: lifecycle.ClaimLifecycle(now, c.Spec.Lifecycle, t.Spec.Lifecycle),
		RequestID: c.Annotations[v1alpha1.AnnotationRequestID],
		// The claim's choice, else the template's default.
		RestartOnFailure: lifecycle.RestartOnFailure(c.Spec.RestartOnFailure, t.Spec.RestartOnFailure),
		// When it was handed out: SandboxQuota's claims per minute.
		Annotations: map[string]string{v1alpha1.AnnotationClaimedAt: now.UTC().Format(time.RFC3339Nano)},
	})
	sb.Labels[v1alpha1.LabelClaim] = c.Name
	sb.Labels[v1alpha1.LabelTemplate] = t.Name
	sb.OwnerReferences = append(sb.OwnerReferences, ClaimOwnerRef(c))
}

// ColdSandbox is the sandbox a claim creates when no warm member is ready. It
// is named after the claim, so a retried create finds its first attempt.
func ColdSandbox(c *v1alpha1.SandboxClaim, t *v1alpha1.SandboxTemplate, now time.Time) *v1alpha1.Sandbox {
	sb := &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace},
		Spec:       lifecycle.SandboxSpecFromTemplate(t.Name, &t.Spec),
	}
	Bind(sb, c, t, now)
	// From a snapshot: its volumes start from the snapshot's
	// VolumeSnapshots, as the bridge's cold sandbox from one does.
	if snap := c.Spec.SnapshotName(); snap != "" {
		sb.Spec.SnapshotRef = &v1alpha1.SnapshotRef{Name: snap}
		sb.Labels[v1alpha1.LabelSnapshot] = snap
	}
	return sb
}

// IsBoundTo says whether sb is held by claim c.
func IsBoundTo(sb *v1alpha1.Sandbox, c *v1alpha1.SandboxClaim) bool {
	return sb.Labels[v1alpha1.LabelClaim] == c.Name && metav1.IsControlledBy(sb, c)
}

// claimView is what the status of a claim depends on.
type claimView struct {
	Now      time.Time
	Sandbox  *v1alpha1.Sandbox // nil when none is bound or it is gone
	Name     string            // bound sandbox name
	Warm     bool
	Gone     bool   // the bound sandbox no longer exists
	Problem  string // why no sandbox could be bound
	PReason  string
	Adopted  bool // bound in this pass
	WasBound bool
	// Retry: look again this much later (a quota held the claim back).
	Retry time.Duration
}

// ComputeStatus is the status of a claim after a pass.
func ComputeStatus(c *v1alpha1.SandboxClaim, v claimView) v1alpha1.SandboxClaimStatus {
	st := *c.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	if v.Name != "" {
		st.SandboxName = v.Name
	}
	if v.Adopted {
		st.Warm = v.Warm
	}
	set := func(t string, ok bool, reason, msg string) {
		lifecycle.SetCondition(&st.Conditions, t, ok, reason, msg, c.Generation, v.Now)
	}
	switch {
	case v.Problem != "":
		set(v1alpha1.ConditionReady, false, v.PReason, v.Problem)
		set(v1alpha1.ConditionFinished, false, v.PReason, "")
	case v.Gone:
		set(v1alpha1.ConditionReady, false, v1alpha1.ReasonSandboxGone, "sandbox "+st.SandboxName+" no longer exists")
		set(v1alpha1.ConditionFinished, true, v1alpha1.ReasonSandboxGone, "")
	case v.Sandbox != nil:
		ready := meta.IsStatusConditionTrue(v.Sandbox.Status.Conditions, v1alpha1.ConditionReady)
		reason, msg := v1alpha1.ReasonSandboxReady, ""
		if !ready {
			// A sandbox with no status yet is Pending: the claim's message
			// does not change (a write) when its first status says so.
			phase := v.Sandbox.Status.Phase
			if phase == "" {
				phase = v1alpha1.SandboxPending
			}
			reason, msg = v1alpha1.ReasonSandboxNotReady, "sandbox phase "+string(phase)
			if v.Sandbox.Status.Message != "" {
				msg += ": " + v.Sandbox.Status.Message
			}
		}
		set(v1alpha1.ConditionReady, ready, reason, msg)
		fin := meta.FindStatusCondition(v.Sandbox.Status.Conditions, v1alpha1.ConditionFinished)
		finished := fin != nil && fin.Status == metav1.ConditionTrue
		finReason := v1alpha1.ReasonRunning
		if finished {
			finReason = fin.Reason
		}
		set(v1alpha1.ConditionFinished, finished, finReason, "")
	}
	return st
}

// TTLDue says whether a finished claim with a TTL should be deleted at now,
// and otherwise how long until it should (0: never / not finished).
func TTLDue(c *v1alpha1.SandboxClaim, st v1alpha1.SandboxClaimStatus, now time.Time) (bool, time.Duration) {
	if c.Spec.TTLSecondsAfterFinished == nil {
		return false, 0
	}
	fin := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionFinished)
	if fin == nil || fin.Status != metav1.ConditionTrue {
		return false, 0
	}
	wait := fin.LastTransitionTime.Add(time.Duration(*c.Spec.TTLSecondsAfterFinished) * time.Second).Sub(now)
	if wait <= 0 {
		return true, 0
	}
	return false, wait
}
