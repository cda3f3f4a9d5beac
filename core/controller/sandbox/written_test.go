package sandbox

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestWrittenStatuses(t *testing.T) {
	sbAt := func(uid, rv string, phase v1alpha1.SandboxPhase) *v1alpha1.Sandbox {
		return &v1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: typesUID(uid), ResourceVersion: rv},
			Status:     v1alpha1.SandboxStatus{Phase: phase},
		}
	}
	cases := map[string]struct {
		cached    *v1alpha1.Sandbox
		wantPhase v1alpha1.SandboxPhase
		forgotten bool
	}{
		"cache has not seen the write": {cached: sbAt("u", "1", ""), wantPhase: v1alpha1.SandboxPending},
		"cache caught up":              {cached: sbAt("u", "2", v1alpha1.SandboxPending), wantPhase: v1alpha1.SandboxPending, forgotten: true},
		"another write since":          {cached: sbAt("u", "3", v1alpha1.SandboxRunning), wantPhase: v1alpha1.SandboxRunning, forgotten: true},
		"a new sandbox of that name":   {cached: sbAt("v", "1", ""), wantPhase: "", forgotten: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var w writtenStatuses
			w.record(nsName("ns", "sb"), "u", "1", v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxPending})
			w.catchUp(tc.cached)
			if tc.cached.Status.Phase != tc.wantPhase {
				t.Errorf("phase %q, want %q", tc.cached.Status.Phase, tc.wantPhase)
			}
			if _, ok := w.m[nsName("ns", "sb")]; ok == tc.forgotten {
				t.Errorf("remembered = %v, want %v", ok, !tc.forgotten)
			}
		})
	}
}

func typesUID(s string) types.UID { return types.UID(s) }

func nsName(ns, n string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: n} }
