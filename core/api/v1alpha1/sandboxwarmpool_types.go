package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TemplateRef names a SandboxTemplate in the same namespace.
type TemplateRef struct {
	// Name of the SandboxTemplate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// SandboxWarmPoolSpec is the desired state of a warm pool.
type SandboxWarmPoolSpec struct {
	// TemplateRef is the template of the members, in the same namespace.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="templateRef is immutable"
	TemplateRef TemplateRef `json:"templateRef"`

	// Replicas is the number of ready, unclaimed sandboxes to keep.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Replicas int32 `json:"replicas"`

	// Snapshot, when set, names a snapshot in the same namespace (on
	// Kubernetes a SandboxSnapshot): members start with its files (forks of
	// it), and it is kept while the pool names it. Changing it rolls the
	// members.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Snapshot string `json:"snapshot,omitempty"`
}

// SandboxWarmPoolStatus is the observed state of a warm pool.
type SandboxWarmPoolStatus struct {
	// Replicas is the number of unclaimed members, ready or not.
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of members ready to be claimed.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// Selector is the label selector of the members (for the scale subresource).
	// +optional
	Selector string `json:"selector,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SandboxWarmPool keeps a number of ready sandboxes of one template.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=sbwp,categories=sandpod
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 57",message="a pool name has at most 57 characters: members are named <pool>-<5 random characters>"
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.templateRef.name`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SandboxWarmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SandboxWarmPoolSpec `json:"spec"`
	// +optional
	Status SandboxWarmPoolStatus `json:"status,omitempty"`
}

// SandboxWarmPoolList is a list of SandboxWarmPools.
// +kubebuilder:object:root=true
type SandboxWarmPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxWarmPool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SandboxWarmPool{}, &SandboxWarmPoolList{})
}
