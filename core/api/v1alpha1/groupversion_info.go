// Package v1alpha1 holds the sandpod.dev/v1alpha1 API: Sandbox,
// SandboxTemplate, SandboxWarmPool and SandboxClaim. The Kubernetes controller
// serves them as CRDs; the local engine reads the same YAML.
//
// +kubebuilder:object:generate=true
// +groupName=sandpod.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every sandpod kind.
	GroupVersion = schema.GroupVersion{Group: "sandpod.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
