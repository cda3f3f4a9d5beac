package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SandboxSnapshotSpec is what to snapshot: the volumes of one sandbox.
type SandboxSnapshotSpec struct {
	// SourceSandbox names the sandbox, in the same namespace, whose
	// volumes (its volumeClaimTemplates' PVCs) are snapshotted. It needs at
	// least one volume claim template: a snapshot holds volumes only, never
	// the pod's memory, its root filesystem or its network state.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="sourceSandbox is immutable"
	SourceSandbox string `json:"sourceSandbox"`

	// VolumeSnapshotClassName is the class of the CSI VolumeSnapshots;
	// unset means the cluster's default VolumeSnapshotClass.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeSnapshotClassName is immutable"
	VolumeSnapshotClassName *string `json:"volumeSnapshotClassName,omitempty"`
}

// SnapshotPhase is where a snapshot is: being taken, usable, or failed.
// +kubebuilder:validation:Enum=Pending;Ready;Failed
type SnapshotPhase string

const (
	SnapshotPending SnapshotPhase = "Pending"
	SnapshotReady   SnapshotPhase = "Ready"
	SnapshotFailed  SnapshotPhase = "Failed"
)

// SnapshotVolume is the CSI VolumeSnapshot of one volume of the source.
type SnapshotVolume struct {
	// Name is the volume claim template's name (e.g. "workspace").
	Name string `json:"name"`
	// VolumeSnapshot is the name of the VolumeSnapshot (same namespace).
	VolumeSnapshot string `json:"volumeSnapshot"`
	// ReadyToUse mirrors the VolumeSnapshot's status.readyToUse.
	// +optional
	ReadyToUse bool `json:"readyToUse,omitempty"`
	// RestoreSize is the smallest volume it can be restored into.
	// +optional
	RestoreSize *resource.Quantity `json:"restoreSize,omitempty"`
}

// SandboxSnapshotStatus is the observed state of a SandboxSnapshot.
type SandboxSnapshotStatus struct {
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty"`
	// Message says why it is not Ready.
	// +optional
	Message string `json:"message,omitempty"`
	// Template is the source sandbox's template: the default template of
	// sandboxes made from the snapshot.
	// +optional
	Template string `json:"template,omitempty"`
	// Volumes are the VolumeSnapshots, one per volume of the source.
	// +optional
	// +listType=map
	// +listMapKey=name
	Volumes []SnapshotVolume `json:"volumes,omitempty"`
	// ReadyToUse is true when every VolumeSnapshot is ready to use.
	// +optional
	ReadyToUse bool `json:"readyToUse,omitempty"`
	// Driver is the CSI driver that holds the VolumeSnapshots.
	// +optional
	Driver string `json:"driver,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SandboxSnapshot is a saved copy of a sandbox's volumes, as CSI
// VolumeSnapshots. Sandboxes and warm pools name it (spec.snapshotRef,
// spec.snapshot) to start from its files; it is kept (a finalizer) while
// any does.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbsnap,categories=sandpod
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.sourceSandbox`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="ReadyToUse",type=boolean,JSONPath=`.status.readyToUse`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SandboxSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SandboxSnapshotSpec `json:"spec"`
	// +optional
	Status SandboxSnapshotStatus `json:"status,omitempty"`
}

// SandboxSnapshotList is a list of SandboxSnapshots.
// +kubebuilder:object:root=true
type SandboxSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxSnapshot `json:"items"`
}

// SnapshotRef names the SandboxSnapshot a sandbox's volumes start from.
type SnapshotRef struct {
	// Name of the SandboxSnapshot, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Restore is a mark that changes each time the sandbox is put back to
	// the snapshot: the controller replaces the sandbox's pod and PVCs whose
	// mark differs, with new PVCs from the snapshot (same names).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Restore string `json:"restore,omitempty"`
}

// VolumeSnapshotName is the name of the VolumeSnapshot of one volume of a
// SandboxSnapshot.
func VolumeSnapshotName(snapshot, volume string) string { return snapshot + "-" + volume }

func init() {
	SchemeBuilder.Register(&SandboxSnapshot{}, &SandboxSnapshotList{})
}
