package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SandboxSpec is the desired state of a Sandbox: one durable pod.
// +kubebuilder:validation:XValidation:rule="has(self.templateRef) == has(oldSelf.templateRef)",message="templateRef cannot be added or removed"
// +kubebuilder:validation:XValidation:rule="has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates)",message="volumeClaimTemplates cannot be added or removed"
// +kubebuilder:validation:XValidation:rule="!has(self.agentContainer) || self.podTemplate.spec.containers.exists(c, c.name == self.agentContainer)",message="agentContainer must name a container of podTemplate.spec.containers"
type SandboxSpec struct {
	// TemplateRef is the template the sandbox was made from, if any.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="templateRef is immutable"
	TemplateRef *TemplateRef `json:"templateRef,omitempty"`

	// PodTemplate is the pod the sandbox runs (copied from the template).
	// The sandbox container (agentContainer, else the first) is where the
	// agent is injected; other containers are sidecars.
	// +required
	PodTemplate corev1.PodTemplateSpec `json:"podTemplate"`

	// AgentContainer names the sandbox container (copied from the
	// template). Default: the first container.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	AgentContainer string `json:"agentContainer,omitempty"`

	// VolumeClaimTemplates become PVCs owned by the sandbox.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeClaimTemplates are immutable"
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// SnapshotRef, when set, names the SandboxSnapshot the sandbox's
	// volumes start from: each PVC whose volume claim template has a
	// volume in the snapshot is made with the VolumeSnapshot as its
	// dataSource. Changing restore puts the volumes back to it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.name == oldSelf.name || self.restore != oldSelf.restore",message="snapshotRef.name changes only with a new restore mark"
	SnapshotRef *SnapshotRef `json:"snapshotRef,omitempty"`

	// Service creates a headless Service for a stable DNS name.
	// +optional
	Service bool `json:"service,omitempty"`

	// OperatingMode Suspended deletes the pod and keeps storage and identity;
	// Paused keeps the pod and freezes the user's processes in it (the
	// agent stops them); Running recreates or thaws it. Default Running.
	// +optional
	OperatingMode OperatingMode `json:"operatingMode,omitempty"`

	// Lifecycle: shutdown time and policy, idle auto-suspend.
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`

	// AutoResume resumes the sandbox when it receives an exec or file call.
	// +optional
	AutoResume bool `json:"autoResume,omitempty"`

	// RestartOnFailure recreates a failed pod instead of reporting it Failed,
	// with a back-off between replacements (status.podRestartStreak). A pod
	// that exited 0 is replaced too; without restartOnFailure such a sandbox
	// is suspended (reason Completed) instead of reported Failed.
	// +optional
	RestartOnFailure bool `json:"restartOnFailure,omitempty"`

	// Env is added to every exec (set by claims).
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// SandboxPhase is a summary of where a sandbox is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Paused;Suspended;Expired;Failed;Terminating
type SandboxPhase string

const (
	SandboxPending     SandboxPhase = "Pending"
	SandboxRunning     SandboxPhase = "Running"
	SandboxPaused      SandboxPhase = "Paused"
	SandboxSuspended   SandboxPhase = "Suspended"
	SandboxExpired     SandboxPhase = "Expired"
	SandboxFailed      SandboxPhase = "Failed"
	SandboxTerminating SandboxPhase = "Terminating"
)

// Condition types of a Sandbox.
const (
	ConditionReady     = "Ready"
	ConditionSuspended = "Suspended"
	ConditionPaused    = "Paused"
	ConditionExpired   = "Expired"
	ConditionFinished  = "Finished"
)

// AgentAuth is how a sandbox's agent admits the bridge (status.agentAuth).
// +kubebuilder:validation:Enum=ClientCertificate
type AgentAuth string

// AgentAuthClientCertificate: the agent checks the bridge's client
// certificate against the pinned bridge CA (core/agentconn).
const AgentAuthClientCertificate AgentAuth = "ClientCertificate"

// SandboxStatus is the observed state of a Sandbox.
type SandboxStatus struct {
	// +optional
	Phase SandboxPhase `json:"phase,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	PodName string `json:"podName,omitempty"`
	// +optional
	// +listType=atomic
	PodIPs []string `json:"podIPs,omitempty"`
	// +optional
	ServiceFQDN string `json:"serviceFQDN,omitempty"`
	// AgentAuth is how the agent of the current pod admits the bridge:
	// ClientCertificate (a client certificate of the bridge CA; no
	// per-sandbox Secret). Empty: a pod made by an earlier controller,
	// whose agent wants the secret from the sandbox's Secret.
	// +optional
	AgentAuth AgentAuth `json:"agentAuth,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastActivityTime is the last exec or file call seen by the bridge.
	// +optional
	LastActivityTime *metav1.Time `json:"lastActivityTime,omitempty"`
	// AgentRestarts counts restarts of the agent's container in the current
	// pod: after it died, or after its liveness probe found it hung. The
	// Ready condition's message names the last exit.
	// +optional
	AgentRestarts int32 `json:"agentRestarts,omitempty"`
	// PodRestarts counts the pods restartOnFailure replaced after they
	// failed (over the sandbox's life).
	// +optional
	PodRestarts int32 `json:"podRestarts,omitempty"`
	// PodRestartStreak counts the replacements since a pod last ran for
	// 10 minutes; the wait before the next one grows with it (10s,
	// doubling, up to 5 minutes; the Ready condition says RestartBackOff
	// meanwhile).
	// +optional
	PodRestartStreak int32 `json:"podRestartStreak,omitempty"`
	// LastPodRestartTime is when the last failed pod was replaced.
	// +optional
	LastPodRestartTime *metav1.Time `json:"lastPodRestartTime,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Sandbox is one durable, isolated workload with a stable identity.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sb,categories=sandpod
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a sandbox name is a DNS label (at most 63 characters, no dots): it is its pod's hostname and its service's name"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.operatingMode`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.podName`
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.agentRestarts`
// +kubebuilder:printcolumn:name="Shutdown",type=date,JSONPath=`.spec.lifecycle.shutdownTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Sandbox struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SandboxSpec `json:"spec"`
	// +optional
	Status SandboxStatus `json:"status,omitempty"`
}

// SandboxList is a list of Sandboxes.
// +kubebuilder:object:root=true
type SandboxList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sandbox `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Sandbox{}, &SandboxList{})
}
