package sandpod

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors, one per kind of failure. Every error returned by a call
// to the server is an *Error that matches exactly one of them with
// errors.Is (ErrSandboxNotFound and ErrFileNotFound also match
// ErrNotFound):
//
//	if errors.Is(err, sandpod.ErrSandboxNotFound) { ... claim another ... }
//
// The gRPC status stays reachable: status.FromError(err) and status.Code(err)
// work on every *Error, wrapped or not.
var (
	// ErrNotFound is any NOT_FOUND: a template, a warm pool, the sandbox
	// of a request id since deleted, and the two below.
	ErrNotFound = errors.New("not found")
	// ErrSandboxNotFound is a call whose sandbox does not exist (never
	// did, was deleted, or is being deleted): the server's reason
	// SANDBOX_NOT_FOUND. Nothing else matches it, so it is safe to claim a
	// new sandbox on it. It also matches ErrNotFound.
	ErrSandboxNotFound = fmt.Errorf("sandbox %w", ErrNotFound)
	// ErrFileNotFound is a file call whose path (or parent) does not exist
	// in the sandbox, which does: the server's reason FILE_NOT_FOUND. It
	// also matches ErrNotFound.
	ErrFileNotFound = fmt.Errorf("file %w", ErrNotFound)
	// ErrSnapshotNotFound is a call whose snapshot does not exist: the
	// server's reason SNAPSHOT_NOT_FOUND. It also matches ErrNotFound.
	ErrSnapshotNotFound = fmt.Errorf("snapshot %w", ErrNotFound)
	// ErrSnapshotInUse is a delete of a snapshot that sandboxes or warm
	// pools still use (the message names them): the server's reason
	// SNAPSHOT_IN_USE. It also matches ErrFailedPrecondition.
	ErrSnapshotInUse = fmt.Errorf("snapshot in use: %w", ErrFailedPrecondition)

	ErrAlreadyExists      = errors.New("already exists")
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrFailedPrecondition = errors.New("failed precondition")
	ErrUnavailable        = errors.New("unavailable")
	ErrResourceExhausted  = errors.New("resource exhausted")
	ErrUnauthenticated    = errors.New("unauthenticated")
	ErrPermissionDenied   = errors.New("permission denied")
	// ErrTimeout is a deadline that ran out: the call's context, the
	// per-call timeout, or a command's own timeout (see CommandError).
	// An *Error matching it also matches context.DeadlineExceeded.
	ErrTimeout = errors.New("timeout")
	// ErrCanceled is a call whose context was canceled. An *Error matching
	// it also matches context.Canceled.
	ErrCanceled = errors.New("canceled")
	ErrAborted  = errors.New("aborted")
	// ErrUnimplemented is a call the server does not offer.
	ErrUnimplemented = errors.New("unimplemented")
	// ErrInternal covers Internal, Unknown and DataLoss statuses.
	ErrInternal = errors.New("internal error")
	// ErrClosed is returned by calls on a closed Client, and by writes to a
	// process's stdin after it was closed.
	ErrClosed = errors.New("sandpod: closed")
)

// Error is a failed call. It keeps the gRPC status it was made from.
type Error struct {
	// Op names the call, e.g. "claim" or "files.read".
	Op string
	// Code is the gRPC status code.
	Code codes.Code
	// Reason is the stable UPPER_SNAKE reason of the status's ErrorInfo
	// detail, when the server sent one.
	Reason string
	// Message is the server's message.
	Message string

	kind   error
	status *status.Status
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sandpod: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.kind.Error())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's kind. A timeout also
// matches context.DeadlineExceeded, a cancellation context.Canceled.
func (e *Error) Is(target error) bool {
	if target == e.kind {
		return true
	}
	switch e.kind {
	case ErrTimeout:
		return target == context.DeadlineExceeded
	case ErrCanceled:
		return target == context.Canceled
	}
	return false
}

// Unwrap returns the sentinel of e's kind.
func (e *Error) Unwrap() error { return e.kind }

// GRPCStatus returns the status the error was made from, so that
// status.FromError and status.Code work on it.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// Reasons of the server's ErrorInfo that refine a code's sentinel.
const (
	reasonSandboxNotFound = "SANDBOX_NOT_FOUND"
	reasonFileNotFound    = "FILE_NOT_FOUND"
	reasonSnapshotMissing = "SNAPSHOT_NOT_FOUND"
	reasonSnapshotInUse   = "SNAPSHOT_IN_USE"
)

// kindOf maps a gRPC code, and the ErrorInfo reason that refines it, to its
// sentinel error: the one table that translates the transport's errors.
// A NOT_FOUND is ErrSandboxNotFound only when the server says so, so that
// a missing file, template or program never passes for a missing sandbox.
func kindOf(c codes.Code, reason string) error {
	switch c {
	case codes.NotFound:
		switch reason {
		case reasonSandboxNotFound:
			return ErrSandboxNotFound
		case reasonFileNotFound:
			return ErrFileNotFound
		case reasonCodeContextNotFound:
			return ErrCodeContextNotFound
		case reasonSnapshotMissing:
			return ErrSnapshotNotFound
		}
		return ErrNotFound
	case codes.AlreadyExists:
		return ErrAlreadyExists
	case codes.InvalidArgument, codes.OutOfRange:
		return ErrInvalidArgument
	case codes.FailedPrecondition:
		if reason == reasonSnapshotInUse {
			return ErrSnapshotInUse
		}
		return ErrFailedPrecondition
	case codes.Unavailable:
		return ErrUnavailable
	case codes.ResourceExhausted:
		return ErrResourceExhausted
	case codes.Unauthenticated:
		return ErrUnauthenticated
	case codes.PermissionDenied:
		return ErrPermissionDenied
	case codes.DeadlineExceeded:
		return ErrTimeout
	case codes.Canceled:
		return ErrCanceled
	case codes.Aborted:
		return ErrAborted
	case codes.Unimplemented:
		return ErrUnimplemented
	default:
		return ErrInternal
	}
}

// wrapError turns any error from the gRPC layer or a context into an
// *Error. nil stays nil; an *Error or *CommandError is returned unchanged
// (with Op filled in if it was empty).
func wrapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Op == "" {
			e.Op = op
		}
		return err
	}
	var ce *CommandError
	if errors.As(err, &ce) || errors.Is(err, ErrClosed) {
		return err
	}
	st := statusOf(err)
	out := &Error{
		Op:      op,
		Code:    st.Code(),
		Message: st.Message(),
		status:  st,
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			out.Reason = info.GetReason()
			break
		}
	}
	out.kind = kindOf(st.Code(), out.Reason)
	return out
}

// statusOf returns the gRPC status of err, mapping bare context errors to
// Canceled and DeadlineExceeded.
func statusOf(err error) *status.Status {
	if st, ok := status.FromError(err); ok {
		return st
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return status.FromContextError(err)
	}
	return status.New(codes.Unknown, err.Error())
}

// CommandError is a command that ran and failed: it exited with a
// non-zero code, was killed by a signal, or ran out of its timeout. It is
// returned by Run and Wait only with WithCheck. Use errors.As to get it:
//
//	var ce *sandpod.CommandError
//	if errors.As(err, &ce) { log.Print(ce.ExitCode, string(ce.Result.Stderr)) }
//
// A command that timed out also matches ErrTimeout with errors.Is.
type CommandError struct {
	// Command is the command line (or the argv joined by spaces).
	Command string
	// ExitCode is the exit code, -1 when killed by a signal.
	ExitCode int
	// Result holds the output and the exit status.
	Result *Result
}

func (e *CommandError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sandpod: command %q ", e.Command)
	switch {
	case e.Result != nil && e.Result.TimedOut:
		b.WriteString("timed out")
	case e.Result != nil && e.Result.Signal != 0:
		fmt.Fprintf(&b, "killed by signal %d", e.Result.Signal)
	default:
		fmt.Fprintf(&b, "exited with code %d", e.ExitCode)
	}
	if e.Result != nil {
		if tail := lastLine(e.Result.Stderr); tail != "" {
			b.WriteString(": ")
			b.WriteString(tail)
		}
	}
	return b.String()
}

// Is makes a timed-out command match ErrTimeout.
func (e *CommandError) Is(target error) bool {
	return target == ErrTimeout && e.Result != nil && e.Result.TimedOut
}

// lastLine returns the last non-empty line of b, cut to 200 bytes.
func lastLine(b []byte) string {
	s := strings.TrimRight(string(b), "\r\n\t ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
