package lifecycle

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// LastActivity is when a sandbox was last used or (re)started: the later of
// the bridge's last activity and the time it last became ready.
func LastActivity(sb *v1alpha1.Sandbox) time.Time {
	var t time.Time
	if sb.Status.LastActivityTime != nil {
		t = sb.Status.LastActivityTime.Time
	}
	if c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue && c.LastTransitionTime.After(t) {
		t = c.LastTransitionTime.Time
	}
	if t.IsZero() {
		t = sb.CreationTimestamp.Time
	}
	return t
}
