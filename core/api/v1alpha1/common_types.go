package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ShutdownPolicy says what happens at a sandbox's shutdown time.
// +kubebuilder:validation:Enum=Delete;Retain
type ShutdownPolicy string

const (
	// ShutdownPolicyDelete deletes the sandbox and its storage.
	ShutdownPolicyDelete ShutdownPolicy = "Delete"
	// ShutdownPolicyRetain stops the sandbox and keeps it and its storage.
	ShutdownPolicyRetain ShutdownPolicy = "Retain"
)

// OperatingMode is whether a sandbox should be running.
// +kubebuilder:validation:Enum=Running;Suspended;Paused
type OperatingMode string

const (
	OperatingModeRunning   OperatingMode = "Running"
	OperatingModeSuspended OperatingMode = "Suspended"
	// OperatingModePaused keeps the workload with its memory but freezes
	// its processes (local engine: the cgroup freezer; Kubernetes: the
	// agent stops the user's processes in the pod). Running thaws it.
	OperatingModePaused OperatingMode = "Paused"
)

// IdleAction is what happens to a sandbox idle for its IdleTimeout.
// +kubebuilder:validation:Enum=Suspend;Pause
type IdleAction string

const (
	// IdleSuspend stops its processes and keeps its files (the default):
	// frees memory and CPU, loses what ran.
	IdleSuspend IdleAction = "Suspend"
	// IdlePause freezes its processes with their memory: frees CPU only,
	// resumes in milliseconds where it stopped.
	IdlePause IdleAction = "Pause"
)

// Lifecycle holds the timing settings shared by templates, sandboxes and claims.
type Lifecycle struct {
	// ShutdownTime is when the sandbox ends.
	// +optional
	ShutdownTime *metav1.Time `json:"shutdownTime,omitempty"`

	// ShutdownPolicy says what happens at ShutdownTime. Default Delete.
	// +optional
	ShutdownPolicy ShutdownPolicy `json:"shutdownPolicy,omitempty"`

	// IdleTimeout suspends the sandbox after this long without exec or file
	// calls. Zero or unset means never.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration such as 90s, 15m or 1h"
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// IdleAction is what IdleTimeout does: Suspend (default) or Pause.
	// +optional
	IdleAction IdleAction `json:"idleAction,omitempty"`
}
