package lifecycle

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// SandboxSpecFromTemplate is the spec of a new sandbox of a template: its pod
// (with the template's RuntimeClass unless the pod names one), storage,
// service and lifecycle defaults. It sets no shutdown time: warm pool members
// wait without a clock; a claim or a create request starts it (ClaimLifecycle).
func SandboxSpecFromTemplate(templateName string, t *v1alpha1.SandboxTemplateSpec) v1alpha1.SandboxSpec {
	pt := *t.PodTemplate.DeepCopy()
	if pt.Spec.RuntimeClassName == nil && t.RuntimeClassName != nil {
		rc := *t.RuntimeClassName
		pt.Spec.RuntimeClassName = &rc
	}
	spec := v1alpha1.SandboxSpec{
		TemplateRef:    &v1alpha1.TemplateRef{Name: templateName},
		PodTemplate:    pt,
		AgentContainer: t.AgentContainer,
		Service:        t.Service,
		AutoResume:     t.AutoResume,
		// The template's default; a claim or request may override it (Take).
		RestartOnFailure: t.RestartOnFailure,
		Lifecycle: v1alpha1.Lifecycle{
			ShutdownPolicy: t.Lifecycle.ShutdownPolicy,
			IdleTimeout:    t.Lifecycle.IdleTimeout.DeepCopy(),
			IdleAction:     t.Lifecycle.IdleAction,
		},
	}
	for i := range t.VolumeClaimTemplates {
		spec.VolumeClaimTemplates = append(spec.VolumeClaimTemplates, *t.VolumeClaimTemplates[i].DeepCopy())
	}
	return spec
}

// ClaimLifecycle resolves the lifecycle of a claimed (or created) sandbox at
// now from the request's lifecycle and the template's defaults: explicit
// shutdown time, else the template's default TTL from now; the request's
// policy, else the template's, else Delete; the request's idle timeout, else
// the template's.
func ClaimLifecycle(now time.Time, req v1alpha1.Lifecycle, tmpl v1alpha1.TemplateLifecycle) v1alpha1.Lifecycle {
	var explicit *time.Time
	if req.ShutdownTime != nil {
		t := req.ShutdownTime.Time
		explicit = &t
	}
	var defaultTTL time.Duration
	if tmpl.DefaultTTL != nil {
		defaultTTL = tmpl.DefaultTTL.Duration
	}
	out := v1alpha1.Lifecycle{
		ShutdownPolicy: EffectivePolicy(req.ShutdownPolicy, tmpl.ShutdownPolicy),
		IdleTimeout:    req.IdleTimeout.DeepCopy(),
	}
	if out.IdleTimeout == nil {
		out.IdleTimeout = tmpl.IdleTimeout.DeepCopy()
	}
	out.IdleAction = req.IdleAction
	if out.IdleAction == "" {
		out.IdleAction = tmpl.IdleAction
	}
	if st := ShutdownTime(now, explicit, 0, defaultTTL); st != nil {
		mt := metav1.NewTime(*st)
		out.ShutdownTime = &mt
	}
	return out
}

// RestartOnFailure resolves whether a claimed (or created) sandbox replaces
// a failed workload: the claim's or request's explicit choice, else the
// template's default.
func RestartOnFailure(req *bool, tmpl bool) bool {
	if req != nil {
		return *req
	}
	return tmpl
}
