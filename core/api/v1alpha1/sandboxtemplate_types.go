package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SandboxTemplateSpec is a reusable blueprint for sandboxes.
// +kubebuilder:validation:XValidation:rule="has(self.podTemplate.spec) && size(self.podTemplate.spec.containers) > 0",message="podTemplate.spec.containers needs at least one container (the first is the sandbox container)"
// +kubebuilder:validation:XValidation:rule="!has(self.agentContainer) || self.podTemplate.spec.containers.exists(c, c.name == self.agentContainer)",message="agentContainer must name a container of podTemplate.spec.containers"
type SandboxTemplateSpec struct {
	// PodTemplate is the pod every sandbox of this template runs. The
	// sandbox container (agentContainer, else the first) is where the agent
	// is injected and where exec, files and code run; other containers are
	// sidecars beside it, sharing its network namespace.
	PodTemplate corev1.PodTemplateSpec `json:"podTemplate"`

	// AgentContainer names the sandbox container: the one the agent serves.
	// Default: the first container.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	AgentContainer string `json:"agentContainer,omitempty"`

	// VolumeClaimTemplates become PVCs owned by each sandbox, kept across
	// suspend and pod replacement.
	// +optional
	// +listType=atomic
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// RuntimeClassName selects the isolation runtime (e.g. gvisor, kata).
	// The controller does not isolate; the runtime does.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`

	// Service gives each sandbox of this template a headless Service, so it
	// has a stable DNS name (<sandbox>.<namespace>.svc).
	// +optional
	Service bool `json:"service,omitempty"`

	// Lifecycle defaults for sandboxes of this template.
	// +optional
	Lifecycle TemplateLifecycle `json:"lifecycle,omitempty"`

	// AutoResume resumes a suspended sandbox when it receives an exec or a
	// file call, instead of answering FailedPrecondition.
	// +optional
	AutoResume bool `json:"autoResume,omitempty"`

	// NetworkPolicy is the managed network policy for sandboxes of this template.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// RestartOnFailure is the default of the sandboxes of this template: a
	// failed pod is replaced (same sandbox, same volumes) instead of being
	// reported Failed. A claim or a request may override it.
	// +optional
	RestartOnFailure bool `json:"restartOnFailure,omitempty"`
}

// TemplateLifecycle holds the lifecycle defaults of a template.
type TemplateLifecycle struct {
	// DefaultLease is the lease of sandboxes the bridge creates or claims
	// without one: reclaimed when their client has not renewed them for
	// this long (docs/api.md#leases). Unset means no lease. SandboxClaim
	// objects never get one (the claim object is their handle).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('2s') && duration(self) <= duration('24h')",message="must be a duration from 2s to 24h"
	DefaultLease *metav1.Duration `json:"defaultLease,omitempty"`

	// DefaultTTL is the time to live of a sandbox when its request gives none.
	// Unset means no scheduled end.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration such as 90s, 15m or 1h"
	DefaultTTL *metav1.Duration `json:"defaultTTL,omitempty"`

	// ShutdownPolicy is the default at shutdown time. Default Delete.
	// +optional
	ShutdownPolicy ShutdownPolicy `json:"shutdownPolicy,omitempty"`

	// IdleTimeout suspends an idle sandbox after this long. Unset means never.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration such as 90s, 15m or 1h"
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// IdleAction is what IdleTimeout does: Suspend (the default: processes
	// stopped, files kept) or Pause (processes frozen with their memory).
	// +optional
	IdleAction IdleAction `json:"idleAction,omitempty"`
}

// EgressMode is what a sandbox may reach.
// +kubebuilder:validation:Enum=Internet;None;Allowlist
type EgressMode string

const (
	// EgressInternet allows the internet but not cluster-internal ranges,
	// the cloud metadata address or the API server.
	EgressInternet EgressMode = "Internet"
	// EgressNone allows no egress at all (local engine: a new network namespace).
	EgressNone EgressMode = "None"
	// EgressAllowlist allows cluster DNS and the CIDRs (and ports) of
	// allowedEgress only; never the cloud metadata address or the API
	// server. Kubernetes only: the local engine refuses such a template.
	EgressAllowlist EgressMode = "Allowlist"
)

// MaxEgressRules caps allowedEgress (and so the NetworkPolicy's egress
// rules; it also bounds the cost of the CRD's validation rules).
const MaxEgressRules = 32

// NetworkPolicySpec configures the managed NetworkPolicy.
// +kubebuilder:validation:XValidation:rule="has(self.egress) && self.egress == 'Allowlist' ? has(self.allowedEgress) && size(self.allowedEgress) > 0 : !has(self.allowedEgress)",message="allowedEgress goes with egress: Allowlist (and lists at least one CIDR); with Internet or None it must be empty"
type NetworkPolicySpec struct {
	// Managed turns the managed NetworkPolicy on. Default true.
	// +optional
	Managed *bool `json:"managed,omitempty"`

	// Egress is what sandboxes may reach. Default Internet.
	// +optional
	Egress EgressMode `json:"egress,omitempty"`

	// AllowedEgress is what egress: Allowlist lets sandboxes reach, besides
	// cluster DNS: destinations by CIDR, on some or all ports.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	AllowedEgress []EgressRule `json:"allowedEgress,omitempty"`
}

// EgressRule allows egress to one CIDR.
type EgressRule struct {
	// CIDR is an IPv4 or IPv6 network in canonical form (no host bits
	// set): 10.20.0.0/16, 203.0.113.7/32, 2001:db8::/32. It is matched
	// against the destination after Service translation: name the
	// endpoints' addresses, not a ClusterIP.
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:Pattern=`^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])([.](25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}/(3[0-2]|[12]?[0-9])|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))$`
	CIDR string `json:"cidr"`

	// Ports are the TCP and UDP ports allowed there; none: every port.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65535
	Ports []int32 `json:"ports,omitempty"`
}

// SandboxTemplateStatus is the observed state of a SandboxTemplate.
type SandboxTemplateStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Hash of the spec; pools roll members whose hash differs.
	// +optional
	SpecHash string `json:"specHash,omitempty"`

	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SandboxTemplate is a reusable blueprint for sandboxes.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbt,categories=sandpod
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.spec.runtimeClassName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SandboxTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SandboxTemplateSpec `json:"spec"`
	// +optional
	Status SandboxTemplateStatus `json:"status,omitempty"`
}

// SandboxTemplateList is a list of SandboxTemplates.
// +kubebuilder:object:root=true
type SandboxTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SandboxTemplate{}, &SandboxTemplateList{})
}
