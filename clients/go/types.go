package sandpod

import (
	"time"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Phase is where a sandbox is in its life.
type Phase string

// The phases a sandbox goes through.
const (
	PhaseUnknown     Phase = "Unknown"
	PhasePending     Phase = "Pending"     // accepted, not ready yet
	PhaseRunning     Phase = "Running"     // ready: exec and files work
	PhaseSuspended   Phase = "Suspended"   // processes stopped, files kept
	PhasePaused      Phase = "Paused"      // processes frozen with their memory (Pause); Resume thaws
	PhaseExpired     Phase = "Expired"     // shutdown time passed under ShutdownRetain
	PhaseFailed      Phase = "Failed"      // failed and not recovered; see Info.Message
	PhaseTerminating Phase = "Terminating" // being deleted
)

func phaseFromProto(p pb.Phase) Phase {
	switch p {
	case pb.Phase_PHASE_PENDING:
		return PhasePending
	case pb.Phase_PHASE_RUNNING:
		return PhaseRunning
	case pb.Phase_PHASE_SUSPENDED:
		return PhaseSuspended
	case pb.Phase_PHASE_PAUSED:
		return PhasePaused
	case pb.Phase_PHASE_EXPIRED:
		return PhaseExpired
	case pb.Phase_PHASE_FAILED:
		return PhaseFailed
	case pb.Phase_PHASE_TERMINATING:
		return PhaseTerminating
	}
	return PhaseUnknown
}

// ShutdownPolicy says what happens when a sandbox reaches its shutdown
// time.
type ShutdownPolicy string

// The shutdown policies. The empty value means the template's default.
const (
	ShutdownDelete ShutdownPolicy = "Delete" // delete the sandbox and its files
	ShutdownRetain ShutdownPolicy = "Retain" // stop it and keep its files (PhaseExpired)
)

func shutdownFromProto(p pb.ShutdownPolicy) ShutdownPolicy {
	switch p {
	case pb.ShutdownPolicy_SHUTDOWN_POLICY_DELETE:
		return ShutdownDelete
	case pb.ShutdownPolicy_SHUTDOWN_POLICY_RETAIN:
		return ShutdownRetain
	}
	return ""
}

func shutdownToProto(p ShutdownPolicy) pb.ShutdownPolicy {
	switch p {
	case ShutdownDelete:
		return pb.ShutdownPolicy_SHUTDOWN_POLICY_DELETE
	case ShutdownRetain:
		return pb.ShutdownPolicy_SHUTDOWN_POLICY_RETAIN
	}
	return pb.ShutdownPolicy_SHUTDOWN_POLICY_UNSPECIFIED
}

// Condition follows the Kubernetes condition shape.
type Condition struct {
	Type               string // Ready, Suspended, Expired or Finished
	Status             string // "True", "False" or "Unknown"
	Reason             string
	Message            string
	LastTransitionTime time.Time
}

// Info is what the server last said about a sandbox.
type Info struct {
	Name      string
	Namespace string
	// UID is unique per incarnation of the name.
	UID string
	// Template is the SandboxTemplate it was made from.
	Template string
	// Pool is the warm pool it came from, empty for a cold create.
	Pool       string
	Labels     map[string]string
	Phase      Phase
	Message    string
	Conditions []Condition
	CreateTime time.Time
	// ShutdownTime is zero when no end is scheduled.
	ShutdownTime     time.Time
	ShutdownPolicy   ShutdownPolicy
	LastActivityTime time.Time
	// IdleTimeout is zero when the sandbox never suspends by itself.
	IdleTimeout time.Duration
	// Claimed is false for warm pool members waiting for a claim.
	Claimed bool
	// EnvKeys names the environment variables every exec receives.
	EnvKeys     []string
	ServiceFQDN string
	// AgentRestarts counts restarts of the sandbox's agent after it died or
	// stopped answering health checks; the Ready condition says why.
	AgentRestarts int32
	// PodRestarts (Kubernetes) counts the pods restartOnFailure replaced
	// after they failed; always 0 on the local engine.
	PodRestarts int32
	// Lease is zero without a lease; LeaseExpireTime is when the server
	// reclaims the sandbox unless its lease is renewed (lease.go).
	Lease           time.Duration
	LeaseExpireTime time.Time
	// Snapshot is the snapshot its files were made from or last restored
	// to ("" if none).
	Snapshot string
}

// Ready reports whether the sandbox accepts exec and file calls.
func (i Info) Ready() bool { return i.Phase == PhaseRunning }

// Condition returns the condition of the given type, if present.
func (i Info) Condition(typ string) (Condition, bool) {
	for _, c := range i.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return Condition{}, false
}

func infoFromProto(s *pb.Sandbox) Info {
	if s == nil {
		return Info{}
	}
	info := Info{
		Name:             s.GetName(),
		Namespace:        s.GetNamespace(),
		UID:              s.GetUid(),
		Template:         s.GetTemplate(),
		Pool:             s.GetPool(),
		Labels:           s.GetLabels(),
		Phase:            phaseFromProto(s.GetPhase()),
		Message:          s.GetMessage(),
		CreateTime:       timeFromProto(s.GetCreateTime()),
		ShutdownTime:     timeFromProto(s.GetShutdownTime()),
		ShutdownPolicy:   shutdownFromProto(s.GetShutdownPolicy()),
		LastActivityTime: timeFromProto(s.GetLastActivityTime()),
		IdleTimeout:      durationFromProto(s.GetIdleTimeout()),
		Claimed:          s.GetClaimed(),
		EnvKeys:          s.GetEnvKeys(),
		ServiceFQDN:      s.GetServiceFqdn(),
		AgentRestarts:    s.GetAgentRestarts(),
		PodRestarts:      s.GetPodRestarts(),
		Snapshot:         s.GetSnapshot(),
		Lease:            durationFromProto(s.GetLease()),
		LeaseExpireTime:  timeFromProto(s.GetLeaseExpireTime()),
	}
	for _, c := range s.GetConditions() {
		info.Conditions = append(info.Conditions, Condition{
			Type:               c.GetType(),
			Status:             c.GetStatus(),
			Reason:             c.GetReason(),
			Message:            c.GetMessage(),
			LastTransitionTime: timeFromProto(c.GetLastTransitionTime()),
		})
	}
	return info
}

// Template is a read-only view of a SandboxTemplate.
type Template struct {
	Name             string
	Namespace        string
	Image            string
	RuntimeClassName string
	IdleTimeout      time.Duration
	DefaultTTL       time.Duration
	ShutdownPolicy   ShutdownPolicy
	// AutoResume: a suspended sandbox resumes by itself on exec or file
	// calls.
	AutoResume       bool
	NetworkIsolated  bool
	MemoryLimitBytes int64
	CPULimitMillis   int64
	PIDsLimit        int64
	// DiskLimitBytes and InodeLimit bound what one sandbox writes to its
	// node's disk (ephemeral-storage); 0: not enforced.
	DiskLimitBytes int64
	InodeLimit     int64
}

func templateFromProto(t *pb.Template) Template {
	return Template{
		Name:             t.GetName(),
		Namespace:        t.GetNamespace(),
		Image:            t.GetImage(),
		RuntimeClassName: t.GetRuntimeClassName(),
		IdleTimeout:      durationFromProto(t.GetIdleTimeout()),
		DefaultTTL:       durationFromProto(t.GetDefaultTtl()),
		ShutdownPolicy:   shutdownFromProto(t.GetShutdownPolicy()),
		AutoResume:       t.GetAutoResume(),
		NetworkIsolated:  t.GetNetworkIsolated(),
		MemoryLimitBytes: t.GetMemoryLimitBytes(),
		CPULimitMillis:   t.GetCpuLimitMillis(),
		PIDsLimit:        t.GetPidsLimit(),
		DiskLimitBytes:   t.GetDiskLimitBytes(),
		InodeLimit:       t.GetInodeLimit(),
	}
}

// WarmPool keeps a number of ready sandboxes of one template.
type WarmPool struct {
	Name      string
	Namespace string
	Template  string
	// Replicas is the desired number of ready, unclaimed members.
	Replicas        int
	ReadyReplicas   int
	PendingReplicas int
}

func warmPoolFromProto(p *pb.WarmPool) WarmPool {
	return WarmPool{
		Name:            p.GetName(),
		Namespace:       p.GetNamespace(),
		Template:        p.GetTemplate(),
		Replicas:        int(p.GetReplicas()),
		ReadyReplicas:   int(p.GetReadyReplicas()),
		PendingReplicas: int(p.GetPendingReplicas()),
	}
}

func timeFromProto(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

func timeToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func durationFromProto(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}

func durationToProto(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}
