package engine

import (
	"fmt"
	"sort"
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Sandbox is what the engine shows of a sandbox: a copy, taken under the
// engine's lock, that the caller may keep (bridge/local turns it into the
// contract's Sandbox).
type Sandbox struct {
	Namespace, Name, UID string
	Template, Pool       string
	Labels               map[string]string
	Phase                v1alpha1.SandboxPhase
	// Message is what happened last, else when and why its agent last
	// restarted.
	Message        string
	Created        time.Time
	ShutdownTime   *time.Time
	ShutdownPolicy v1alpha1.ShutdownPolicy
	LastActivity   time.Time
	Claimed        bool
	Expired        bool
	AgentRestarts  int32
	Snapshot       string
	// Lease and LeaseExpires: set together when the sandbox has a lease.
	Lease        time.Duration
	LeaseExpires *time.Time
	IdleTimeout  time.Duration
	// EnvKeys are the names of its environment variables, sorted.
	EnvKeys []string
}

// view renders the sandbox. Callers hold e.mu.
func (s *sandbox) view() Sandbox {
	r := &s.rec
	out := Sandbox{
		Name: r.Name, Namespace: r.Namespace, UID: r.UID, Template: r.Spec.Template, Pool: r.Pool,
		Labels: copyMap(r.Labels), Phase: s.phase(), Message: r.message(), Created: r.Created,
		ShutdownTime: r.ShutdownTime, ShutdownPolicy: lifecycle.EffectivePolicy(r.ShutdownPolicy, ""),
		LastActivity: r.LastActivity, Claimed: r.Claimed, Expired: r.Expired, AgentRestarts: r.AgentRestarts,
		Snapshot: r.Snapshot, IdleTimeout: r.Spec.IdleTimeout.Duration,
	}
	if r.Lease > 0 && r.LeaseExpires != nil {
		out.Lease, out.LeaseExpires = r.Lease, r.LeaseExpires
	}
	for k := range r.Env {
		out.EnvKeys = append(out.EnvKeys, k)
	}
	sort.Strings(out.EnvKeys)
	return out
}

// EventType says what happened to a sandbox in an Event.
type EventType int

// The types of Events.
const (
	Added EventType = iota + 1
	Modified
	Deleted
)

// Event is a change of a sandbox, as Watch sends it.
type Event struct {
	Type    EventType
	Sandbox Sandbox
}

// SnapshotInfo is what the engine shows of a snapshot.
type SnapshotInfo struct {
	Namespace, Name, UID string
	Labels               map[string]string
	// Failed: its files are missing; Message says so.
	Failed         bool
	Source         string
	Template       string
	Bytes, Entries int64
	// Storage says how sandboxes are made from it ("reflink", "copy", ...).
	Storage string
	Created time.Time
	UsedBy  []string
	Skipped []string
	Message string
}

func (e *Engine) snapViewLocked(s *snapRecord) SnapshotInfo {
	out := SnapshotInfo{
		Name: s.Name, Namespace: s.Namespace, UID: s.UID, Labels: copyMap(s.Labels),
		Source: s.Source, Template: s.Template, Bytes: s.Bytes, Entries: s.Entries,
		Storage: e.forkMethod, Created: s.Created, UsedBy: e.usersLocked(s.Namespace, s.Name), Skipped: s.Skipped,
		Message: fmt.Sprintf("files of the workspace only (no memory, no processes, no network state); taken by %s in %s; sandboxes are made from it by %s (%s)", s.TakenBy, s.Took, e.forkMethod, e.forkOwners),
	}
	if s.Message != "" {
		out.Failed, out.Message = true, s.Message
	}
	return out
}

// Template is a template as the engine applies it.
type Template struct {
	Namespace, Name, Image, RuntimeClass string
	ShutdownPolicy                       v1alpha1.ShutdownPolicy
	AutoResume                           bool
	IdleAction                           v1alpha1.IdleAction
	NetworkIsolated                      bool
	// Limits applied (0: none, also under --no-limits); disk limits only
	// where the filesystem enforces them.
	MemoryBytes, DiskBytes, DiskInodes int64
	CPUMillis, PidsLimit               int64
	IdleTimeout, DefaultTTL            time.Duration
}

// PoolStatus is a warm pool with its counts.
type PoolStatus struct {
	Namespace, Name, Template string
	Replicas, Ready, Pending  int32
}

// Endpoint says how to reach a sandbox's agent; Done ends the call's
// activity (idle suspend waits for it).
type Endpoint struct {
	Target, Secret string
	Env            map[string]string
	Done           func()
}
