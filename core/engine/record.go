package engine

import (
	"context"
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// DefaultNamespace is used when a request or definition names none.
const DefaultNamespace = "default"

// MaxPoolReplicas bounds a warm pool on one machine.
const MaxPoolReplicas = 1000

// record is the persisted state of one sandbox.
type record struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	UID       string            `json:"uid"`
	Pool      string            `json:"pool,omitempty"`
	Claimed   bool              `json:"claimed,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Spec      runSpec           `json:"spec"`
	Secret    string            `json:"secret"`
	RequestID string            `json:"requestID,omitempty"`
	// RestartOnFailure is the claim's or create's explicit choice (nil:
	// the template's, else the engine's agentRestart policy).
	RestartOnFailure *bool `json:"restartOnFailure,omitempty"`

	Mode           v1alpha1.OperatingMode  `json:"mode"`
	Expired        bool                    `json:"expired,omitempty"`
	Deleting       bool                    `json:"deleting,omitempty"`
	Created        time.Time               `json:"created"`
	ShutdownTime   *time.Time              `json:"shutdownTime,omitempty"`
	ShutdownPolicy v1alpha1.ShutdownPolicy `json:"shutdownPolicy,omitempty"`
	LastActivity   time.Time               `json:"lastActivity"`
	// Message explains a failure or the last transition.
	Message string `json:"message,omitempty"`

	// PID and PIDStart identify the running init process, so a restarted
	// engine finds it again and never mistakes a reused PID for it.
	PID      int    `json:"pid,omitempty"`
	PIDStart uint64 `json:"pidStart,omitempty"`
	// Container is the runc container of the running init.
	Container string `json:"container,omitempty"`
	// IDBase is the first host id of the sandbox's user namespace (a range
	// of its own, see idRanges); 0 until its first start.
	IDBase uint32 `json:"idBase,omitempty"`

	// The agent's restarts (health.go): how many, the last end, when the
	// current agent started answering (a long run resets the back-off),
	// the back-off counts, and when a restart waiting out its back-off is due.
	AgentRestarts int32      `json:"agentRestarts,omitempty"`
	LastAgentExit *agentExit `json:"lastAgentExit,omitempty"`
	ReadySince    time.Time  `json:"readySince,omitempty"`
	RestartStreak int        `json:"restartStreak,omitempty"`
	StartFailures int        `json:"startFailures,omitempty"`
	RestartDue    time.Time  `json:"restartDue,omitempty"`

	// Snapshot is the snapshot its workspace was made from or restored to
	// (fork.go); Seeded once the workspace was made from it, Layered when
	// that workspace is an overlay over the snapshot's files (which then
	// must stay).
	Snapshot    string `json:"snapshot,omitempty"`
	SnapshotUID string `json:"snapshotUID,omitempty"`
	Seeded      bool   `json:"seeded,omitempty"`
	Layered     bool   `json:"layered,omitempty"`

	// Lease and LeaseExpires (lease.go): reclaimed at LeaseExpires unless
	// its client renews it.
	Lease        time.Duration `json:"lease,omitempty"`
	LeaseExpires *time.Time    `json:"leaseExpires,omitempty"`
}

func (r *record) key() string { return r.Namespace + "/" + r.Name }

// makeSandbox is the in-memory sandbox of a record.
func makeSandbox(rec record) *sandbox { return &sandbox{rec: rec, name: rec.key()} }

// key is the sandbox's "namespace/name", readable without Engine.mu.
func (sb *sandbox) key() string { return sb.name }

// message is the sandbox's message: what happened last, else when and why
// its agent last restarted.
func (r *record) message() string {
	if r.Message != "" {
		return r.Message
	}
	return restartSummary(r.AgentRestarts, r.LastAgentExit)
}

// sandbox is a record plus what the engine observes at run time.
type sandbox struct {
	rec record
	// name is rec.key(), kept apart: a sandbox's namespace and name never
	// change, while rec is replaced under Engine.mu (a save, a delete), so
	// code without the lock (logs, goroutines) reads name, not rec.
	name     string
	workload lifecycle.WorkloadState
	proc     *process
	// busy is set while a start or stop is in progress.
	busy bool
	// cancelStart ends the start in progress (nil when none): a delete
	// stops it instead of waiting for it, or racing it for the files.
	cancelStart context.CancelFunc
	// active counts exec and file calls in progress (no idle suspend then).
	active int

	// Liveness of proc (liveness.go): failed health checks in a row, the
	// last answer, and why the engine killed proc, if it did.
	healthFails int
	lastAnswer  time.Time
	killedFor   string
}

func (s *sandbox) observed() lifecycle.Observed {
	return lifecycle.Observed{Deleting: s.rec.Deleting, Mode: s.rec.Mode, Expired: s.rec.Expired, Workload: s.workload}
}

func (s *sandbox) phase() v1alpha1.SandboxPhase { return lifecycle.Phase(s.observed()) }

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
