package lifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestSandboxSpecFromTemplate(t *testing.T) {
	gvisor, kata := "gvisor", "kata"
	cases := map[string]struct {
		podRC, tmplRC *string
		wantRC        *string
	}{
		"template runtime class applied": {tmplRC: &gvisor, wantRC: &gvisor},
		"pod runtime class wins":         {podRC: &kata, tmplRC: &gvisor, wantRC: &kata},
		"none":                           {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := &v1alpha1.SandboxTemplateSpec{
				PodTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RuntimeClassName: tc.podRC,
					Containers:       []corev1.Container{{Name: "main", Image: "busybox"}},
				}},
				RuntimeClassName: tc.tmplRC,
				AgentContainer:   "main",
				Service:          true,
				Lifecycle:        v1alpha1.TemplateLifecycle{ShutdownPolicy: v1alpha1.ShutdownPolicyRetain},
			}
			got := SandboxSpecFromTemplate("py", tmpl)
			if diff := cmp.Diff(tc.wantRC, got.PodTemplate.Spec.RuntimeClassName); diff != "" {
				t.Errorf("runtimeClassName (-want +got):\n%s", diff)
			}
			if got.TemplateRef == nil || got.TemplateRef.Name != "py" || !got.Service || got.AgentContainer != "main" || got.Lifecycle.ShutdownPolicy != v1alpha1.ShutdownPolicyRetain {
				t.Errorf("spec = %+v", got)
			}
			if got.Lifecycle.ShutdownTime != nil {
				t.Errorf("pool members must not get a shutdown time")
			}
			got.PodTemplate.Spec.Containers[0].Image = "changed"
			if tmpl.PodTemplate.Spec.Containers[0].Image != "busybox" {
				t.Errorf("template was aliased")
			}
		})
	}
}

func TestClaimLifecycle(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := metav1.NewTime(now.Add(time.Hour))
	ttl := &metav1.Duration{Duration: 10 * time.Minute}
	idle := &metav1.Duration{Duration: time.Minute}
	cases := map[string]struct {
		req            v1alpha1.Lifecycle
		tmpl           v1alpha1.TemplateLifecycle
		wantShutdown   *time.Time
		wantPolicy     v1alpha1.ShutdownPolicy
		wantIdleTimout *metav1.Duration
		wantIdleAction v1alpha1.IdleAction
	}{
		"nothing": {wantPolicy: v1alpha1.ShutdownPolicyDelete},
		"explicit wins over default ttl": {
			req: v1alpha1.Lifecycle{ShutdownTime: &at}, tmpl: v1alpha1.TemplateLifecycle{DefaultTTL: ttl},
			wantShutdown: ptr(at.Time), wantPolicy: v1alpha1.ShutdownPolicyDelete,
		},
		"default ttl from now, template policy and idle": {
			tmpl:         v1alpha1.TemplateLifecycle{DefaultTTL: ttl, ShutdownPolicy: v1alpha1.ShutdownPolicyRetain, IdleTimeout: idle},
			wantShutdown: ptr(now.Add(10 * time.Minute)), wantPolicy: v1alpha1.ShutdownPolicyRetain, wantIdleTimout: idle,
		},
		"template idle action": {
			tmpl:       v1alpha1.TemplateLifecycle{IdleTimeout: idle, IdleAction: v1alpha1.IdlePause},
			wantPolicy: v1alpha1.ShutdownPolicyDelete, wantIdleTimout: idle, wantIdleAction: v1alpha1.IdlePause,
		},
		"request idle action wins": {
			req:        v1alpha1.Lifecycle{IdleAction: v1alpha1.IdleSuspend},
			tmpl:       v1alpha1.TemplateLifecycle{IdleAction: v1alpha1.IdlePause},
			wantPolicy: v1alpha1.ShutdownPolicyDelete, wantIdleAction: v1alpha1.IdleSuspend,
		},
		"request policy wins": {
			req:        v1alpha1.Lifecycle{ShutdownPolicy: v1alpha1.ShutdownPolicyDelete},
			tmpl:       v1alpha1.TemplateLifecycle{ShutdownPolicy: v1alpha1.ShutdownPolicyRetain},
			wantPolicy: v1alpha1.ShutdownPolicyDelete,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ClaimLifecycle(now, tc.req, tc.tmpl)
			var gotShutdown *time.Time
			if got.ShutdownTime != nil {
				gotShutdown = &got.ShutdownTime.Time
			}
			if diff := cmp.Diff(tc.wantShutdown, gotShutdown); diff != "" {
				t.Errorf("shutdown (-want +got):\n%s", diff)
			}
			if got.ShutdownPolicy != tc.wantPolicy {
				t.Errorf("policy = %q, want %q", got.ShutdownPolicy, tc.wantPolicy)
			}
			if diff := cmp.Diff(tc.wantIdleTimout, got.IdleTimeout); diff != "" {
				t.Errorf("idle (-want +got):\n%s", diff)
			}
			if got.IdleAction != tc.wantIdleAction {
				t.Errorf("idle action = %q, want %q", got.IdleAction, tc.wantIdleAction)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
