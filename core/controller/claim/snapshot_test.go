package claim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// A claim from a snapshot makes its cold sandbox from it, as the bridge
// does (spec.snapshotRef and the snapshot label); a claim without one does
// not.
func TestColdSandboxFromSnapshot(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "py"}}
	for _, tc := range []struct {
		name string
		ref  *v1alpha1.ClaimSnapshotRef
		want string
	}{
		{name: "plain", ref: nil, want: ""},
		{name: "from a snapshot", ref: &v1alpha1.ClaimSnapshotRef{Name: "base"}, want: "base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"},
				Spec:       v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: "py"}, SnapshotRef: tc.ref},
			}
			sb := ColdSandbox(c, tmpl, now)
			got := ""
			if sb.Spec.SnapshotRef != nil {
				got = sb.Spec.SnapshotRef.Name
				if sb.Spec.SnapshotRef.Restore != "" {
					t.Errorf("a new sandbox carries restore mark %q", sb.Spec.SnapshotRef.Restore)
				}
			}
			if got != tc.want || sb.Labels[v1alpha1.LabelSnapshot] != tc.want {
				t.Errorf("snapshotRef %q, label %q; want %q", got, sb.Labels[v1alpha1.LabelSnapshot], tc.want)
			}
			if !IsBoundTo(sb, c) {
				t.Errorf("not bound to its claim")
			}
		})
	}
}

func TestSnapshotReason(t *testing.T) {
	for why, want := range map[lifecycle.SnapshotSourceWhy]string{
		lifecycle.SnapshotSourceNotFound:  v1alpha1.ReasonSnapshotNotFound,
		lifecycle.SnapshotSourceFailed:    v1alpha1.ReasonSnapshotNotReady,
		lifecycle.SnapshotSourceNoVolumes: v1alpha1.ReasonSandboxHasNoVolumes,
	} {
		if got := snapshotReason(why); got != want {
			t.Errorf("snapshotReason(%d) = %q, want %q", why, got, want)
		}
	}
}
