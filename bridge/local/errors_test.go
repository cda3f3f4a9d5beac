package local

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/engine"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Each engine error keeps the code, reason and message the contract gave
// it before the engine had errors of its own.
func TestToStatus(t *testing.T) {
	cases := map[string]struct {
		err    error
		code   codes.Code
		reason errinfo.Why
		msg    string
	}{
		"kind and reason": {
			err:  &engine.Error{Kind: engine.ErrExists, Reason: errinfo.ReasonSandboxExists, Msg: `sandbox "a" already exists`},
			code: codes.AlreadyExists, reason: errinfo.ReasonSandboxExists, msg: `sandbox "a" already exists`,
		},
		"memory snapshot": {
			err: engine.ErrMemorySnapshot, code: codes.Unimplemented, reason: errinfo.ReasonMemorySnapshotUnsupported,
			msg: "the local engine snapshots files only (the workspace), not the memory of processes: leave include_memory unset",
		},
		"sandbox not found": {
			err: &engine.NotFoundError{Namespace: "default", Name: "a"}, code: codes.NotFound, reason: errinfo.ReasonSandboxNotFound,
			msg: `sandbox "a" not found in namespace "default"`,
		},
		"sandbox gone while waiting": {
			err:  &engine.NotFoundError{Namespace: "default", Name: "a", Msg: `sandbox "a" was deleted while starting`},
			code: codes.NotFound, reason: errinfo.ReasonSandboxNotFound, msg: `sandbox "a" was deleted while starting`,
		},
		"snapshot not found": {
			err: &engine.NotFoundError{Snapshot: true, Namespace: "default", Name: "s"}, code: codes.NotFound, reason: errinfo.ReasonSnapshotNotFound,
			msg: `snapshot "s" not found in namespace "default" (ListSnapshots shows what exists)`,
		},
		"snapshot in use": {
			err: &engine.InUseError{Namespace: "default", Name: "s", Users: []string{"sandbox/a"}}, code: codes.FailedPrecondition, reason: errinfo.ReasonSnapshotInUse,
			msg: `snapshot "s" is in use by sandbox/a: delete those sandboxes (or restore them to another snapshot) and remove it from those warm pools first`,
		},
		"pool member refuses": {
			err:  &engine.RefusalError{Target: lifecycle.CallTarget{Name: "a", Pool: "p"}, Why: "a is a pool member"},
			code: codes.FailedPrecondition, reason: errinfo.ReasonUnclaimedPoolMember, msg: "a is a pool member",
		},
		"failed sandbox": {
			err:  &engine.PhaseError{Namespace: "default", Name: "a", Phase: v1alpha1.SandboxFailed, Detail: "exited 1 (resume restarts it)"},
			code: codes.FailedPrecondition, reason: errinfo.ReasonSandboxFailed, msg: `sandbox "a" has failed: exited 1 (resume restarts it)`,
		},
		"suspended sandbox": {
			err:  &engine.PhaseError{Namespace: "default", Name: "a", Phase: v1alpha1.SandboxSuspended},
			code: codes.FailedPrecondition, reason: errinfo.ReasonSandboxSuspended, msg: `sandbox "a" is suspended and its template does not auto-resume: resume it first`,
		},
		"other errors pass": {err: errors.New("boom"), code: codes.Unknown, msg: "boom"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := toStatus(c.err)
			st, _ := status.FromError(got)
			if st.Code() != c.code || st.Message() != c.msg || errinfo.Reason(got) != c.reason {
				t.Fatalf("toStatus = %v %q (reason %q), want %v %q (reason %q)", st.Code(), st.Message(), errinfo.Reason(got), c.code, c.msg, c.reason)
			}
		})
	}
}

// Every kind has a code, and errors.Is finds the kind of each error type.
func TestKinds(t *testing.T) {
	for k := engine.ErrInvalid; k <= engine.ErrUnsupported; k++ {
		if _, ok := codeOf[k]; !ok {
			t.Errorf("kind %v has no gRPC code", k)
		}
	}
	is := map[error]engine.Kind{
		&engine.Error{Kind: engine.ErrDeadline}: engine.ErrDeadline,
		&engine.NotFoundError{}:                 engine.ErrNotFound,
		&engine.PhaseError{}:                    engine.ErrConflict,
		&engine.InUseError{}:                    engine.ErrConflict,
		&engine.RefusalError{}:                  engine.ErrConflict,
		&engine.QuotaError{}:                    engine.ErrExhausted,
	}
	for err, k := range is {
		if !errors.Is(err, k) || errors.Is(err, engine.ErrInternal) {
			t.Errorf("%T: errors.Is(%v) is not the only kind it matches", err, k)
		}
	}
}
