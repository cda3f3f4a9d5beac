package sandpod

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestWrapErrorMapsEveryCode(t *testing.T) {
	tests := map[codes.Code]error{
		codes.NotFound:           ErrNotFound,
		codes.AlreadyExists:      ErrAlreadyExists,
		codes.InvalidArgument:    ErrInvalidArgument,
		codes.OutOfRange:         ErrInvalidArgument,
		codes.FailedPrecondition: ErrFailedPrecondition,
		codes.Unavailable:        ErrUnavailable,
		codes.ResourceExhausted:  ErrResourceExhausted,
		codes.Unauthenticated:    ErrUnauthenticated,
		codes.PermissionDenied:   ErrPermissionDenied,
		codes.DeadlineExceeded:   ErrTimeout,
		codes.Canceled:           ErrCanceled,
		codes.Aborted:            ErrAborted,
		codes.Unimplemented:      ErrUnimplemented,
		codes.Internal:           ErrInternal,
		codes.Unknown:            ErrInternal,
		codes.DataLoss:           ErrInternal,
	}
	for code, want := range tests {
		t.Run(code.String(), func(t *testing.T) {
			err := wrapError("get", status.Error(code, "boom"))
			if !errors.Is(err, want) {
				t.Fatalf("errors.Is(%v, %v) = false", err, want)
			}
			// The status survives, also through further wrapping.
			wrapped := fmt.Errorf("outer: %w", err)
			if got := status.Code(wrapped); got != code {
				t.Errorf("status.Code = %v, want %v", got, code)
			}
			st, ok := status.FromError(err)
			if !ok || st.Code() != code || st.Message() != "boom" {
				t.Errorf("status.FromError = %v, %v", st, ok)
			}
			var e *Error
			if !errors.As(wrapped, &e) || e.Op != "get" || e.Code != code {
				t.Errorf("errors.As *Error = %+v", e)
			}
		})
	}
}

func TestWrapErrorContext(t *testing.T) {
	err := wrapError("claim", context.DeadlineExceeded)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
	err = wrapError("claim", context.Canceled)
	if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	if errors.Is(err, ErrTimeout) {
		t.Errorf("canceled matches ErrTimeout")
	}
	if wrapError("x", nil) != nil {
		t.Errorf("nil is not nil")
	}
}

func TestErrorReasonAndMessage(t *testing.T) {
	st, err := status.New(codes.NotFound, `sandbox "x" not found`).WithDetails(&errdetails.ErrorInfo{Reason: "SANDBOX_NOT_FOUND", Domain: "sandpod.dev"})
	if err != nil {
		t.Fatal(err)
	}
	got := wrapError("get", st.Err())
	var e *Error
	if !errors.As(got, &e) || e.Reason != "SANDBOX_NOT_FOUND" {
		t.Fatalf("reason: %+v", e)
	}
	want := `sandpod: get: sandbox not found: sandbox "x" not found (SANDBOX_NOT_FOUND)`
	if got.Error() != want {
		t.Errorf("Error() = %q, want %q", got.Error(), want)
	}
}

// A NOT_FOUND is ErrSandboxNotFound only with the server's reason
// SANDBOX_NOT_FOUND, ErrFileNotFound only with FILE_NOT_FOUND; all of them
// match ErrNotFound.
func TestNotFoundReasons(t *testing.T) {
	notFound := func(reason string) error {
		st := status.New(codes.NotFound, "gone")
		if reason != "" {
			st, _ = st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "sandpod.dev"})
		}
		return wrapError("op", st.Err())
	}
	for reason, want := range map[string]error{
		"":                      ErrNotFound,
		"SANDBOX_NOT_FOUND":     ErrSandboxNotFound,
		"FILE_NOT_FOUND":        ErrFileNotFound,
		"SNAPSHOT_NOT_FOUND":    ErrSnapshotNotFound,
		"UNCLAIMED_POOL_MEMBER": ErrNotFound, // a reason of another code refines nothing
	} {
		err := notFound(reason)
		if !errors.Is(err, ErrNotFound) || !errors.Is(err, want) {
			t.Errorf("reason %q: %v does not match %v and ErrNotFound", reason, err, want)
		}
		for _, other := range []error{ErrSandboxNotFound, ErrFileNotFound, ErrSnapshotNotFound} {
			if other != want && errors.Is(err, other) {
				t.Errorf("reason %q: %v matches %v", reason, err, other)
			}
		}
	}
}

func TestCommandError(t *testing.T) {
	tests := map[string]struct {
		res         Result
		wantMsg     string
		wantTimeout bool
	}{
		"exit": {
			res:     Result{ExitCode: 2, Stderr: []byte("line 1\nNameError: x\n")},
			wantMsg: `sandpod: command "cmd" exited with code 2: NameError: x`,
		},
		"signal": {
			res:     Result{ExitCode: -1, Signal: 9},
			wantMsg: `sandpod: command "cmd" killed by signal 9`,
		},
		"timeout": {
			res:         Result{ExitCode: -1, Signal: 9, TimedOut: true},
			wantMsg:     `sandpod: command "cmd" timed out`,
			wantTimeout: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var err error = &CommandError{Command: "cmd", ExitCode: tc.res.ExitCode, Result: &tc.res}
			if err.Error() != tc.wantMsg {
				t.Errorf("Error() = %q, want %q", err.Error(), tc.wantMsg)
			}
			if got := errors.Is(err, ErrTimeout); got != tc.wantTimeout {
				t.Errorf("errors.Is(ErrTimeout) = %v", got)
			}
			var ce *CommandError
			if !errors.As(fmt.Errorf("w: %w", err), &ce) || ce.ExitCode != tc.res.ExitCode {
				t.Errorf("errors.As: %+v", ce)
			}
		})
	}
}

// SNAPSHOT_IN_USE refines FAILED_PRECONDITION only.
func TestSnapshotInUseReason(t *testing.T) {
	st, _ := status.New(codes.FailedPrecondition, "in use").WithDetails(&errdetails.ErrorInfo{Reason: "SNAPSHOT_IN_USE", Domain: "sandpod.dev"})
	if err := wrapError("delete snapshot", st.Err()); !errors.Is(err, ErrSnapshotInUse) || !errors.Is(err, ErrFailedPrecondition) {
		t.Errorf("%v: want ErrSnapshotInUse and ErrFailedPrecondition", err)
	}
	if err := wrapError("op", status.Error(codes.FailedPrecondition, "other")); errors.Is(err, ErrSnapshotInUse) {
		t.Errorf("%v matches ErrSnapshotInUse without the reason", err)
	}
}
