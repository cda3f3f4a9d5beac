package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// Exit codes (docs/cli.md). Usage errors keep 2, as the server subcommands
// and most Unix tools do; the others sit in the BSD sysexits range so that
// they rarely collide with the exit code `exec` passes through.
const (
	ExitOK      = 0
	ExitError   = 1 // anything else: an internal error of the server, ...
	ExitUsage   = 2 // unknown command or flag, bad argument, duration, port
	ExitInvalid = 65
	// ExitNoInput: a local file to read is missing or unreadable (cp).
	ExitNoInput  = 66
	ExitNotFound = 67 // sandbox, template, pool, or a file in the sandbox
	// ExitConflict: the sandbox's state does not allow it (suspended,
	// expired), or it already exists.
	ExitConflict    = 68
	ExitUnavailable = 69 // the server is not reachable or unavailable
	// ExitCantCreate: a local file cannot be written (cp).
	ExitCantCreate = 73
	// ExitBusy: the server is out of capacity; try again later.
	ExitBusy   = 75
	ExitDenied = 77 // no or wrong token, or not allowed in the namespace
	ExitConfig = 78 // the config file cannot be read or is invalid
	// ExitUnsupported: the server does not offer the call (expose before
	// port previews), or the API has nothing to answer with (logs).
	ExitUnsupported = 79
	// ExitTimeout: a deadline ran out (claim --wait, exec --timeout),
	// like timeout(1).
	ExitTimeout     = 124
	ExitInterrupted = 130 // Ctrl-C
)

// codeError is an error a command returns with its exit code; msg is the
// one line printed to stderr (empty: nothing more to say).
type codeError struct {
	code int
	msg  string
}

func (e *codeError) Error() string { return e.msg }

func exitErrorf(code int, format string, args ...any) error {
	return &codeError{code: code, msg: "sandpod: " + fmt.Sprintf(format, args...)}
}

func usageErrorf(format string, args ...any) *codeError {
	return &codeError{code: ExitUsage, msg: "sandpod: " + fmt.Sprintf(format, args...)}
}

// exitCodeOf maps an error of the Go client to the CLI's exit code.
func exitCodeOf(err error) int {
	var ce *codeError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, sandpod.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, sandpod.ErrUnavailable):
		return ExitUnavailable
	case errors.Is(err, sandpod.ErrInvalidArgument):
		return ExitInvalid
	case errors.Is(err, sandpod.ErrFailedPrecondition), errors.Is(err, sandpod.ErrAlreadyExists):
		return ExitConflict
	case errors.Is(err, sandpod.ErrResourceExhausted), errors.Is(err, sandpod.ErrAborted):
		return ExitBusy
	case errors.Is(err, sandpod.ErrUnauthenticated), errors.Is(err, sandpod.ErrPermissionDenied):
		return ExitDenied
	case errors.Is(err, sandpod.ErrUnimplemented):
		return ExitUnsupported
	case errors.Is(err, sandpod.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return ExitTimeout
	case errors.Is(err, sandpod.ErrCanceled), errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitError
}

// hintFor is the second half of the error line: what to do about it.
func hintFor(err error, s *Settings) string {
	from := func(key string) string {
		if src := s.Sources[key]; src != "default" {
			return "the " + key + " came from " + src
		}
		return "no " + key + " was given"
	}
	switch {
	case s == nil:
	case errors.Is(err, sandpod.ErrUnavailable):
		return from("address") + "; set --address, $SANDPOD_ADDRESS or address: in the config file"
	case errors.Is(err, sandpod.ErrUnauthenticated):
		return from("token") + "; set --token, $SANDPOD_TOKEN or token: in the config file"
	}
	return ""
}

// asOp names the failed call op in err's message (expose calls Get first:
// its failure is expose's).
func asOp(op string, err error) error {
	var e *sandpod.Error
	if errors.As(err, &e) {
		e.Op = op
	}
	return err
}

// commandError turns an error of a command into its exit code and the one
// line printed to stderr. The client's own message already names the call,
// the gRPC status and the ErrorInfo reason.
func (a *app) commandError(err error) error {
	if err == nil {
		return nil
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return err
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "sandpod: ") {
		msg = "sandpod: " + msg
	}
	if h := hintFor(err, a.settings); h != "" {
		msg += " (" + h + ")"
	}
	return &codeError{code: exitCodeOf(err), msg: msg}
}
