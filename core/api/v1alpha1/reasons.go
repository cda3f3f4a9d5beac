package v1alpha1

// Condition reasons set by the controller. Condition types are in
// sandbox_types.go (Ready, Suspended, Paused, Expired, Finished); claims and pools use
// Ready too.
const (
	ReasonPodReady            = "PodReady"
	ReasonPodPending          = "PodPending"
	ReasonPodFailed           = "PodFailed"
	ReasonPodAbsent           = "PodAbsent"
	ReasonSuspended           = "Suspended"
	ReasonPaused              = "Paused"
	ReasonIdle                = "Idle"
	ReasonRunning             = "Running"
	ReasonShutdownTimeReached = "ShutdownTimeReached"
	ReasonRuntimeClassMissing = "RuntimeClassRequired"
	ReasonInvalidSpec         = "InvalidSpec"
	// ReasonNameConflict: a child's name is taken by an object the sandbox
	// does not own; the controller leaves that object alone.
	ReasonNameConflict     = "NameConflict"
	ReasonColdCreated      = "ColdCreated"
	ReasonSandboxReady     = "SandboxReady"
	ReasonSandboxNotReady  = "SandboxNotReady"
	ReasonSandboxGone      = "SandboxGone"
	ReasonTemplateNotFound = "TemplateNotFound"
	ReasonReconciled       = "Reconciled"
	ReasonPoolFilling      = "Filling"
	// ReasonQuotaExceeded: a claim waits because a SandboxQuota of its
	// namespace is full (the message names the quota and the limit).
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonLeaseExpired: the sandbox's client stopped renewing its lease.
	ReasonLeaseExpired = "LeaseExpired"
	// ReasonSnapshotPending: the sandbox's snapshot has no VolumeSnapshots
	// yet; its volumes are made once it has.
	ReasonSnapshotPending = "SnapshotPending"
	// ReasonSnapshotUnusable: the sandbox's snapshot is missing or failed.
	ReasonSnapshotUnusable = "SnapshotUnusable"
	// ReasonSnapshotNotFound: a claim's spec.snapshotRef names no
	// SandboxSnapshot of its namespace (or one being deleted); the bridge
	// answers SNAPSHOT_NOT_FOUND.
	ReasonSnapshotNotFound = "SnapshotNotFound"
	// ReasonSnapshotNotReady: a claim's snapshot failed (the bridge:
	// SNAPSHOT_NOT_READY).
	ReasonSnapshotNotReady = "SnapshotNotReady"
	// ReasonSandboxHasNoVolumes: a claim from a snapshot names a template
	// without volume claim templates (the bridge: SANDBOX_HAS_NO_VOLUMES).
	ReasonSandboxHasNoVolumes = "SandboxHasNoVolumes"
	// ReasonRestoring: the sandbox's pod and volumes are being replaced by
	// volumes from its snapshot.
	ReasonRestoring = "Restoring"
	// ReasonRestarting: a failed pod is being replaced (restartOnFailure).
	ReasonRestarting = "Restarting"
	// ReasonAgentCAChanged: the pod's agent trusts another bridge CA than
	// the controller's; the pod is being replaced.
	ReasonAgentCAChanged = "AgentCAChanged"
	// ReasonRestartBackOff: a failed pod waits for its replacement, later
	// with each replacement in a row (status.podRestartStreak).
	ReasonRestartBackOff = "RestartBackOff"
	// ReasonCompleted: the sandbox's pod exited 0 and it does not restart
	// on failure: the controller suspended it (resume starts it again).
	ReasonCompleted = "Completed"
)
