package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SandboxQuotaSpec limits the sandboxes of a namespace, or of some of its
// templates and pools. Over a limit, a create, claim or fork is refused
// with RESOURCE_EXHAUSTED naming the quota and the limit (a SandboxClaim:
// its Ready condition, reason QuotaExceeded). Unclaimed warm pool members
// count against no quota: they are the operator's capacity.
// +kubebuilder:validation:XValidation:rule="has(self.maxSandboxes) || has(self.maxClaimsPerMinute)",message="set maxSandboxes, maxClaimsPerMinute or both"
type SandboxQuotaSpec struct {
	// MaxSandboxes bounds the claimed and created sandboxes (any phase but
	// being deleted) that the quota covers.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxSandboxes *int32 `json:"maxSandboxes,omitempty"`
	// MaxClaimsPerMinute bounds the sandboxes handed out (claims, creates
	// and forks) in any sliding minute.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxClaimsPerMinute *int32 `json:"maxClaimsPerMinute,omitempty"`
	// Templates narrows the quota to sandboxes of these templates.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	Templates []string `json:"templates,omitempty"`
	// Pools narrows the quota to the templates of these warm pools: a claim
	// of a pool's template is served by the pool or cold, and both count.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	Pools []string `json:"pools,omitempty"`
}

// SandboxQuota limits the sandboxes of its namespace. Without Templates
// and Pools it covers every sandbox of the namespace; several quotas all
// apply.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=sbq,categories=sandpod
// +kubebuilder:printcolumn:name="MaxSandboxes",type=integer,JSONPath=`.spec.maxSandboxes`
// +kubebuilder:printcolumn:name="MaxClaimsPerMinute",type=integer,JSONPath=`.spec.maxClaimsPerMinute`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SandboxQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec SandboxQuotaSpec `json:"spec"`
}

// SandboxQuotaList is a list of SandboxQuotas.
// +kubebuilder:object:root=true
type SandboxQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxQuota `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SandboxQuota{}, &SandboxQuotaList{})
}
