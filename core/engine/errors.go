package engine

import (
	"fmt"
	"strings"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/engine/cgroups"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Kind sorts the engine's errors by what a caller can do about them;
// errors.Is(err, ErrNotFound) tells them apart. bridge/local maps each kind
// to a gRPC code.
type Kind int

// The kinds of the engine's errors.
const (
	ErrInvalid     Kind = iota + 1 // the request is wrong (a reused request id)
	ErrNotFound                    // the sandbox, snapshot, template or pool does not exist
	ErrExists                      // the name is taken
	ErrConflict                    // the object's state forbids the call (expired, paused, in use)
	ErrExhausted                   // a quota or limit refuses it
	ErrUnavailable                 // the store or the sandbox cannot answer now; a retry may
	ErrDeadline                    // the caller's deadline passed before the sandbox was ready
	ErrInternal                    // the engine failed (a copy, a freeze)
	ErrUnsupported                 // the local engine does not do this
)

var kindNames = map[Kind]string{
	ErrInvalid: "invalid", ErrNotFound: "not found", ErrExists: "exists", ErrConflict: "conflict",
	ErrExhausted: "exhausted", ErrUnavailable: "unavailable", ErrDeadline: "deadline",
	ErrInternal: "internal", ErrUnsupported: "unsupported",
}

func (k Kind) Error() string { return kindNames[k] }

// Error is an engine error: its kind, the contract's reason word (errinfo),
// the metadata that names the objects, and a message for a person.
type Error struct {
	Kind   Kind
	Reason errinfo.Why
	Meta   map[string]string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Is matches the error's Kind.
func (e *Error) Is(target error) bool { k, ok := target.(Kind); return ok && k == e.Kind }

func fail(k Kind, reason errinfo.Why, meta map[string]string, msg string) error {
	return &Error{Kind: k, Reason: reason, Meta: meta, Msg: msg}
}

func failf(k Kind, reason errinfo.Why, format string, args ...any) error {
	return &Error{Kind: k, Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// NotFoundError is a sandbox (Snapshot false) or snapshot that does not
// exist. Msg, when set, says more than "not found" (deleted while waiting).
type NotFoundError struct {
	Snapshot        bool
	Namespace, Name string
	Msg             string
}

func (e *NotFoundError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	what := "sandbox"
	if e.Snapshot {
		what = "snapshot"
	}
	return fmt.Sprintf("%s %q not found in namespace %q", what, e.Name, e.Namespace)
}

// Is matches ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

func sandboxNotFound(ns, name string) error { return &NotFoundError{Namespace: ns, Name: name} }

func snapshotNotFound(ns, name string) error {
	return &NotFoundError{Snapshot: true, Namespace: ns, Name: name}
}

// InUseError is a snapshot that sandboxes ("sandbox/NAME") or pools
// ("pool/NAME") still need.
type InUseError struct {
	Namespace, Name string
	Users           []string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("snapshot %q is in use by %v", e.Name, e.Users)
}

// Is matches ErrConflict.
func (e *InUseError) Is(target error) bool { return target == ErrConflict }

// QuotaError is a create, claim or fork that a SandboxQuota refuses.
type QuotaError struct {
	Namespace, Template string
	Refusal             *lifecycle.QuotaRefusal
}

func (e *QuotaError) Error() string { return e.Refusal.Message(e.Namespace, e.Template) }

// Is matches ErrExhausted.
func (e *QuotaError) Is(target error) bool { return target == ErrExhausted }

// RefusalError is a call that an unclaimed pool member refuses
// (lifecycle.MayReach): Why says so.
type RefusalError struct {
	Target lifecycle.CallTarget
	Why    string
}

func (e *RefusalError) Error() string { return e.Why }

// Is matches ErrConflict.
func (e *RefusalError) Is(target error) bool { return target == ErrConflict }

// PhaseError is a call for the agent of a sandbox whose phase keeps its
// agent unreachable (paused or suspended without auto-resume, expired,
// failed: Detail says why). The answer is decided once for both backends
// (protoconv.AgentRefusal).
type PhaseError struct {
	Namespace, Name string
	Phase           v1alpha1.SandboxPhase
	Detail          string
}

func (e *PhaseError) Error() string {
	msg := fmt.Sprintf("sandbox %q is %s", e.Name, strings.ToLower(string(e.Phase)))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Is matches ErrConflict.
func (e *PhaseError) Is(target error) bool { return target == ErrConflict }

// LimitsError is New's refusal of a host where it cannot apply the limits
// its templates promise (cgroups.Detect; --no-limits runs without them).
type LimitsError = cgroups.LimitsError
