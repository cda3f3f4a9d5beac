package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelValue is a Kubernetes label value: at most 63 letters, digits, '-',
// '_' or '.', starting and ending alphanumeric, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// LabelMap returns labels as the plain map a Sandbox's metadata takes.
func LabelMap(labels map[string]LabelValue) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[k] = string(v)
	}
	return out
}

// SandboxClaimSpec asks for one sandbox of a template.
// +kubebuilder:validation:XValidation:rule="has(self.snapshotRef) == has(oldSelf.snapshotRef)",message="snapshotRef is immutable: it cannot be added or removed after the claim is made"
type SandboxClaimSpec struct {
	// TemplateRef is the template of the sandbox to claim; a warm pool of
	// that template in the same namespace serves the claim when it has a
	// ready member.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="templateRef is immutable"
	TemplateRef TemplateRef `json:"templateRef"`

	// Lifecycle of the claimed sandbox.
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`

	// TTLSecondsAfterFinished deletes the claim this long after its sandbox
	// finished (expired, failed or deleted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// Env is added to every exec in the claimed sandbox.
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Labels are added to the claimed sandbox. Keys are checked by CEL,
	// values by their schema (LabelValue: a CEL rule on the values of a map
	// would exceed the API server's cost budget).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('sandpod.dev/'))",message="labels under sandpod.dev/ are reserved"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="label keys must be Kubernetes label keys: [prefix/]name, the name at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// RestartOnFailure overrides the template's restartOnFailure for the
	// claimed sandbox; unset keeps the template's.
	// +optional
	RestartOnFailure *bool `json:"restartOnFailure,omitempty"`

	// SnapshotRef, when set, claims a sandbox whose volumes start from this
	// SandboxSnapshot (same namespace: the reference has no namespace): a
	// ready member of a pool of forks (a warm pool of the template whose
	// spec.snapshot names it), else a sandbox created cold with that
	// spec.snapshotRef. The snapshot must exist and not have failed, and the
	// template must have volume claim templates; otherwise the claim's Ready
	// condition says why (SnapshotNotFound, SnapshotNotReady,
	// SandboxHasNoVolumes). A snapshot still being taken is accepted: the
	// sandbox waits for it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="snapshotRef is immutable"
	SnapshotRef *ClaimSnapshotRef `json:"snapshotRef,omitempty"`
}

// ClaimSnapshotRef names the SandboxSnapshot a claimed sandbox starts from.
type ClaimSnapshotRef struct {
	// Name of the SandboxSnapshot, in the claim's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// SnapshotName is the SandboxSnapshot the claim starts from ("" if none).
func (s *SandboxClaimSpec) SnapshotName() string {
	if s.SnapshotRef == nil {
		return ""
	}
	return s.SnapshotRef.Name
}

// SandboxClaimStatus is the observed state of a claim.
type SandboxClaimStatus struct {
	// SandboxName is the sandbox this claim holds.
	// +optional
	SandboxName string `json:"sandboxName,omitempty"`
	// Warm is true when a ready pool member was adopted.
	// +optional
	Warm bool `json:"warm,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SandboxClaim adopts a ready sandbox from a warm pool, or creates one cold.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbc,categories=sandpod
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a claim name has at most 63 characters: a cold sandbox is named after its claim"
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.templateRef.name`
// +kubebuilder:printcolumn:name="Sandbox",type=string,JSONPath=`.status.sandboxName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Warm",type=boolean,JSONPath=`.status.warm`
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshotRef.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SandboxClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SandboxClaimSpec `json:"spec"`
	// +optional
	Status SandboxClaimStatus `json:"status,omitempty"`
}

// SandboxClaimList is a list of SandboxClaims.
// +kubebuilder:object:root=true
type SandboxClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SandboxClaim{}, &SandboxClaimList{})
}
