package v1alpha1

// Label, annotation and finalizer names, in one place.
const (
	// LabelPool names the warm pool a sandbox belongs to (removed on claim).
	LabelPool = "sandpod.dev/pool"
	// LabelTemplate names the template a sandbox was made from.
	LabelTemplate = "sandpod.dev/template"
	// LabelTemplateHash is the template spec hash a pool member was made with.
	LabelTemplateHash = "sandpod.dev/template-hash"
	// LabelClaim names the claim holding a sandbox.
	LabelClaim = "sandpod.dev/claim"
	// LabelSandbox is set on the pod, service and PVCs of a sandbox.
	LabelSandbox = "sandpod.dev/sandbox"
	// LabelSnapshot names the SandboxSnapshot a sandbox (or pool member)
	// was made from, and the SandboxSnapshot a VolumeSnapshot belongs to.
	LabelSnapshot = "sandpod.dev/snapshot"
	// LabelForkOf names the sandbox a fork's implicit snapshot was taken
	// of (ForkSandbox from a sandbox), on both engines.
	LabelForkOf = "sandpod.dev/fork-of"

	// AnnotationIdleSuspended marks a sandbox the controller suspended for
	// idleness (removed when it runs again).
	AnnotationIdleSuspended = "sandpod.dev/idle-suspended"

	// AnnotationCompleted marks a sandbox the controller suspended because
	// its pod exited 0 without restartOnFailure (removed when it runs again).
	AnnotationCompleted = "sandpod.dev/completed"

	// AnnotationRequestID records the client request id that created a sandbox.
	AnnotationRequestID = "sandpod.dev/request-id"
	// AnnotationRequestMethod records which RPC (create or claim) used the
	// request id, so the other one refuses to reuse it.
	AnnotationRequestMethod = "sandpod.dev/request-method"

	// AnnotationFromPool names the warm pool a claimed sandbox was adopted
	// from (set in the adopting write, since the pool label goes then).
	AnnotationFromPool = "sandpod.dev/from-pool"

	// AnnotationLease and AnnotationLeaseExpires hold a sandbox's lease (a
	// Go duration) and when it ends unless renewed (RFC 3339): the bridge
	// writes them at claim or create and on renewals (at most once per a
	// third of the lease), the controller reclaims the sandbox after it.
	AnnotationLease        = "sandpod.dev/lease"
	AnnotationLeaseExpires = "sandpod.dev/lease-expires"
	// AnnotationClaimedAt is when the bridge handed a sandbox out (RFC 3339,
	// set in the adopting write): claims per minute are counted from it.
	AnnotationClaimedAt = "sandpod.dev/claimed-at"
	// Finalizer guards cleanup of a sandbox's children.
	Finalizer = "sandpod.dev/finalizer"
	// SnapshotFinalizer keeps a SandboxSnapshot (and its VolumeSnapshots)
	// while a sandbox or warm pool names it.
	SnapshotFinalizer = "sandpod.dev/snapshot-in-use"
	// AnnotationRestore on a PVC is the sandbox's snapshotRef.restore mark
	// it was made with (SnapshotRef.Restore).
	AnnotationRestore = "sandpod.dev/restore"
)

// Names of what the controller adds to every sandbox pod.
const (
	// AgentPort is the port the in-pod agent listens on (gRPC).
	AgentPort = 7070
	// AgentPortName names the agent's container port.
	AgentPortName = "sandpod-agent"
	// AgentHealthPort serves only the standard gRPC health service, without
	// TLS, for the kubelet's liveness probe (which speaks no TLS).
	AgentHealthPort = 7071
	// AgentTokenAudience is the audience of the service-account token the
	// kubelet projects into a sandbox pod's agent container (at
	// AgentIdentityTokenPath): the agent's proof of its pod, which the
	// bridge checks with a TokenReview for this audience. The API server
	// accepts no token of this audience for its own requests.
	AgentTokenAudience = "sandpod.dev/agent"
	// AgentIdentityTokenPath is where the agent reads that token.
	AgentIdentityTokenPath = "/sandpod/identity/token"
	// AgentIdentityTokenSeconds is the token's life; the kubelet writes a
	// new one when 80% of it has passed.
	AgentIdentityTokenSeconds = 3600
	// LabelAgentAuth marks a pod whose agent admits the bridge by its client
	// certificate (AgentAuthClientCertificate); pods of earlier controllers
	// lack it and read their sandbox's Secret.
	LabelAgentAuth = "sandpod.dev/agent-auth"
	// LabelAgentCA names the bridge CA a pod's agent trusts: the first 32
	// hex digits of its pin (a label value holds at most 63 characters).
	// A controller whose CA is another (sandpod reinstalled after its
	// namespace went, or the CA replaced) replaces such a pod: neither the
	// bridge nor its agent would accept the other any more.
	LabelAgentCA = "sandpod.dev/agent-ca"
	// SecretKeyAgent is the key of the per-sandbox Secret holding the agent
	// secret: only pods made before AgentAuthClientCertificate (the
	// controller no longer makes these Secrets; the bridge still reads them).
	SecretKeyAgent = "agent-secret"
	// SecretKeyTLSCert and SecretKeyTLSKey hold the agent's own self-signed
	// certificate and key (PEM); the bridge pins the certificate.
	SecretKeyTLSCert = "tls.crt"
	SecretKeyTLSKey  = "tls.key"
	// LabelComponent / ComponentBridge select bridge pods in network policies.
	LabelAppName    = "app.kubernetes.io/name"
	LabelComponent  = "app.kubernetes.io/component"
	AppName         = "sandpod"
	ComponentBridge = "bridge"
)
