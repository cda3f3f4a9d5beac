package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestOnlyVersionMoved(t *testing.T) {
	base := func() *v1alpha1.Sandbox {
		return &v1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "sb", ResourceVersion: "1", Generation: 1,
				Labels:        map[string]string{"sandpod.dev/pool": "p"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "sandpod"}}},
			Status: v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxPending},
		}
	}
	cases := map[string]struct {
		change func(*v1alpha1.Sandbox)
		want   bool
	}{
		"managedFields cleared":   {func(sb *v1alpha1.Sandbox) { sb.ResourceVersion, sb.ManagedFields = "2", nil }, true},
		"nothing but the version": {func(sb *v1alpha1.Sandbox) { sb.ResourceVersion = "2" }, true},
		"resync (same version)":   {func(*v1alpha1.Sandbox) {}, false},
		"label":                   {func(sb *v1alpha1.Sandbox) { sb.ResourceVersion, sb.Labels = "2", nil }, false},
		"annotation": {func(sb *v1alpha1.Sandbox) {
			sb.ResourceVersion, sb.Annotations = "2", map[string]string{"a": "b"}
		}, false},
		"status":     {func(sb *v1alpha1.Sandbox) { sb.ResourceVersion, sb.Status.Phase = "2", v1alpha1.SandboxRunning }, false},
		"generation": {func(sb *v1alpha1.Sandbox) { sb.ResourceVersion, sb.Generation = "2", 2 }, false},
		"spec":       {func(sb *v1alpha1.Sandbox) { sb.ResourceVersion, sb.Spec.RestartOnFailure = "2", true }, false},
		"deleted": {func(sb *v1alpha1.Sandbox) {
			now := metav1.Now()
			sb.ResourceVersion, sb.DeletionTimestamp = "2", &now
		}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			old, new := base(), base()
			c.change(new)
			if got := onlyVersionMoved(old, new); got != c.want {
				t.Errorf("onlyVersionMoved = %v, want %v", got, c.want)
			}
		})
	}
	if onlyVersionMoved(&v1alpha1.SandboxClaim{}, &v1alpha1.SandboxClaim{}) {
		t.Error("a claim is not a sandbox")
	}
}
