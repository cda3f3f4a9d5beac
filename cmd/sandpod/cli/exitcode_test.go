package cli

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// failingConn answers every call with one status, as a server would.
type failingConn struct{ st *status.Status }

func (f failingConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	return f.st.Err()
}

func (f failingConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, f.st.Err()
}

// clientError is the error the Go client returns for a server's status.
func clientError(t *testing.T, c codes.Code, reason string) error {
	t.Helper()
	st := status.New(c, "the server's message")
	if reason != "" {
		var err error
		if st, err = st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "sandpod.dev"}); err != nil {
			t.Fatal(err)
		}
	}
	client := sandpod.New(failingConn{st}, sandpod.WithRetryPolicy(sandpod.NoRetry))
	_, err := client.Get(context.Background(), "sb")
	if err == nil {
		t.Fatal("no error")
	}
	return err
}

func TestExitCodeOf(t *testing.T) {
	for _, tc := range []struct {
		code   codes.Code
		reason string
		want   int
	}{
		{codes.NotFound, "SANDBOX_NOT_FOUND", ExitNotFound},
		{codes.NotFound, "FILE_NOT_FOUND", ExitNotFound},
		{codes.NotFound, "", ExitNotFound},
		{codes.Unavailable, "", ExitUnavailable},
		{codes.InvalidArgument, "", ExitInvalid},
		{codes.OutOfRange, "", ExitInvalid},
		{codes.FailedPrecondition, "", ExitConflict},
		{codes.AlreadyExists, "", ExitConflict},
		{codes.ResourceExhausted, "", ExitBusy},
		{codes.Aborted, "", ExitBusy},
		{codes.Unauthenticated, "", ExitDenied},
		{codes.PermissionDenied, "", ExitDenied},
		{codes.Unimplemented, "", ExitUnsupported},
		{codes.DeadlineExceeded, "", ExitTimeout},
		{codes.Canceled, "", ExitInterrupted},
		{codes.Internal, "", ExitError},
		{codes.Unknown, "", ExitError},
	} {
		err := clientError(t, tc.code, tc.reason)
		if got := exitCodeOf(err); got != tc.want {
			t.Errorf("%s %s: exit code %d, want %d (%v)", tc.code, tc.reason, got, tc.want, err)
		}
	}
	if got := exitCodeOf(usageErrorf("x")); got != ExitUsage {
		t.Errorf("usage error: %d", got)
	}
	if got := exitCodeOf(errors.New("plain")); got != ExitError {
		t.Errorf("plain error: %d", got)
	}
}

func TestCommandErrorIsOneActionableLine(t *testing.T) {
	s := &Settings{Sources: map[string]string{"address": "$SANDPOD_ADDRESS", "token": "default"}}
	a := &app{settings: s}
	for _, tc := range []struct {
		code       codes.Code
		reason     string
		wantCode   int
		wantInLine []string
	}{
		{codes.NotFound, "SANDBOX_NOT_FOUND", ExitNotFound, []string{"sandpod: get: sandbox not found: the server's message (SANDBOX_NOT_FOUND)"}},
		{codes.Unavailable, "", ExitUnavailable, []string{"the address came from $SANDPOD_ADDRESS", "--address"}},
		{codes.Unauthenticated, "", ExitDenied, []string{"no token was given", "--token"}},
	} {
		err := a.commandError(clientError(t, tc.code, tc.reason))
		var ce *codeError
		if !errors.As(err, &ce) || ce.code != tc.wantCode {
			t.Fatalf("%s: %v, want exit code %d", tc.code, err, tc.wantCode)
		}
		for _, w := range tc.wantInLine {
			if !contains(ce.msg, w) {
				t.Errorf("%s: %q does not say %q", tc.code, ce.msg, w)
			}
		}
		if contains(ce.msg, "\n") {
			t.Errorf("%s: more than one line: %q", tc.code, ce.msg)
		}
	}
	// asOp names the command's call.
	err := a.commandError(asOp("expose", clientError(t, codes.NotFound, "SANDBOX_NOT_FOUND")))
	if !contains(err.Error(), "sandpod: expose: sandbox not found") {
		t.Errorf("asOp: %v", err)
	}
}
