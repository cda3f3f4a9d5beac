package kube

import (
	"context"
	"log/slog"
	"reflect"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// TestIdlePauseDue: which sandboxes the bridge pauses for idleness.
func TestIdlePauseDue(t *testing.T) {
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	mk := func(name string, edit func(*v1alpha1.Sandbox)) *v1alpha1.Sandbox {
		sb := &v1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Spec: v1alpha1.SandboxSpec{
				TemplateRef:   &v1alpha1.TemplateRef{Name: "py"},
				OperatingMode: v1alpha1.OperatingModeRunning,
				Lifecycle:     v1alpha1.Lifecycle{IdleTimeout: &metav1.Duration{Duration: time.Minute}, IdleAction: v1alpha1.IdlePause},
			},
			Status: v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxRunning, LastActivityTime: &metav1.Time{Time: now.Add(-2 * time.Minute)}},
		}
		if edit != nil {
			edit(sb)
		}
		return sb
	}
	objs := []*v1alpha1.Sandbox{
		mk("due", nil),
		mk("recent-status", func(sb *v1alpha1.Sandbox) {
			sb.Status.LastActivityTime = &metav1.Time{Time: now.Add(-30 * time.Second)}
		}),
		mk("recent-call", nil), // touched through this bridge below
		mk("suspends", func(sb *v1alpha1.Sandbox) { sb.Spec.Lifecycle.IdleAction = v1alpha1.IdleSuspend }),
		mk("no-timeout", func(sb *v1alpha1.Sandbox) { sb.Spec.Lifecycle.IdleTimeout = nil }),
		mk("paused", func(sb *v1alpha1.Sandbox) { sb.Spec.OperatingMode = v1alpha1.OperatingModePaused }),
		mk("suspended", func(sb *v1alpha1.Sandbox) {
			sb.Spec.OperatingMode = v1alpha1.OperatingModeSuspended
			sb.Status.Phase = v1alpha1.SandboxSuspended
		}),
		mk("pending", func(sb *v1alpha1.Sandbox) { sb.Status.Phase = v1alpha1.SandboxPending }),
		mk("member", func(sb *v1alpha1.Sandbox) { sb.Labels = map[string]string{v1alpha1.LabelPool: "py"} }),
		mk("shutdown-due", func(sb *v1alpha1.Sandbox) { sb.Spec.Lifecycle.ShutdownTime = &metav1.Time{Time: now.Add(-time.Second)} }),
		mk("lease-expired", func(sb *v1alpha1.Sandbox) {
			sb.Annotations = map[string]string{v1alpha1.AnnotationLease: "30s", v1alpha1.AnnotationLeaseExpires: now.Add(-time.Second).Format(time.RFC3339Nano)}
		}),
		mk("lease-held", func(sb *v1alpha1.Sandbox) {
			sb.Name = "due-lease-held"
			sb.Annotations = map[string]string{v1alpha1.AnnotationLease: "30s", v1alpha1.AnnotationLeaseExpires: now.Add(time.Minute).Format(time.RFC3339Nano)}
		}),
	}
	cb := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.Sandbox{}, indexIdlePause, idlePauseIndex)
	for _, o := range objs {
		cb = cb.WithObjects(o)
	}
	cl := cb.Build()
	b := &Backend{client: cl, activity: newActivity(cl, time.Hour, slog.Default()), now: func() time.Time { return now }}
	b.activity.mu.Lock()
	b.activity.last["ns/recent-call"] = now.Add(-10 * time.Second)
	b.activity.mu.Unlock()

	var got []string
	for _, sb := range b.idlePauseDue(context.Background(), now) {
		got = append(got, sb.Name)
	}
	sort.Strings(got)
	if want := []string{"due", "due-lease-held"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("due for an idle pause: %v, want %v", got, want)
	}
}
