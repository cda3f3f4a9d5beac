package harness

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// PodTemplate is a sandbox's pod on the kwok bed: one container that sleeps.
func PodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "python:3.13-slim", Command: []string{"sleep", "infinity"},
		}}},
	}
}

// Template is a SandboxTemplate of PodTemplate.
func Template(ns, name string) *v1alpha1.SandboxTemplate {
	return &v1alpha1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxTemplateSpec{PodTemplate: PodTemplate()},
	}
}

// Claim is a SandboxClaim of template in ns.
func Claim(ns, name, template string) *v1alpha1.SandboxClaim {
	return &v1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: template}},
	}
}

// Pool is a SandboxWarmPool of replicas of template in ns.
func Pool(ns, name, template string, replicas int32) *v1alpha1.SandboxWarmPool {
	return &v1alpha1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: template}, Replicas: replicas},
	}
}
