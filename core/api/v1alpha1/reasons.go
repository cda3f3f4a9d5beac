package v1alpha1

// Condition reasons set by the controller. Condition types are in
// sandbox_types.go (Ready, Suspended, Expired, Finished); claims and pools use
// Ready too.
const (
	ReasonPodReady            = "PodReady"
	ReasonPodPending          = "PodPending"
	ReasonPodFailed           = "PodFailed"
	ReasonPodAbsent           = "PodAbsent"
	ReasonSuspended           = "Suspended"
	ReasonIdle                = "Idle"
	ReasonRunning             = "Running"
	ReasonShutdownTimeReached = "ShutdownTimeReached"
	ReasonRuntimeClassMissing = "RuntimeClassRequired"
	ReasonInvalidSpec         = "InvalidSpec"
	ReasonWarmAdopted         = "WarmAdopted"
	ReasonColdCreated         = "ColdCreated"
	ReasonSandboxReady        = "SandboxReady"
	ReasonSandboxNotReady     = "SandboxNotReady"
	ReasonSandboxGone         = "SandboxGone"
	ReasonTemplateNotFound    = "TemplateNotFound"
	ReasonReconciled          = "Reconciled"
	ReasonPoolFilling         = "Filling"
)
