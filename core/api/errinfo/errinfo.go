// Package errinfo attaches sandpod's google.rpc.ErrorInfo reasons to gRPC
// statuses, so that a client can tell answers that share a code apart
// without parsing messages: a NOT_FOUND about the sandbox itself (claim
// another) from one about a file in it (write it first). It depends on
// nothing but gRPC, so the agent can use it too.
package errinfo

import (
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of sandpod's own reasons.
const Domain = "sandpod.dev"

const (
	// ReasonSandboxNotFound: the sandbox the call names does not exist
	// (never did, was deleted, or is being deleted). Only answers about the
	// sandbox itself carry it: a missing template, pool, file or program
	// does not.
	ReasonSandboxNotFound = "SANDBOX_NOT_FOUND"
	// ReasonFileNotFound: a path a file call names (or a parent of it)
	// does not exist in the sandbox, which does.
	ReasonFileNotFound = "FILE_NOT_FOUND"
	// ReasonSandboxPaused: an exec or file call on a paused sandbox (whose
	// template does not auto-resume): resume it, then retry.
	ReasonSandboxPaused = "SANDBOX_PAUSED"
)

// New returns a status error of code with an ErrorInfo of reason.
func New(code codes.Code, reason string, metadata map[string]string, msg string) error {
	st := status.New(code, msg)
	withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata})
	if err != nil {
		return st.Err() // the details are a convenience; the code and message stand alone
	}
	return withInfo.Err()
}

// SandboxNotFound is the NOT_FOUND of a call whose sandbox does not exist.
func SandboxNotFound(ns, name string) error {
	return SandboxGone(ns, name, fmt.Sprintf("sandbox %q not found in namespace %q", name, ns))
}

// SandboxGone is SandboxNotFound with a message of its own (a sandbox
// deleted while a call waited for it, or being deleted).
func SandboxGone(ns, name, msg string) error {
	return New(codes.NotFound, ReasonSandboxNotFound, map[string]string{"sandbox": name, "namespace": ns}, msg)
}

// Reason returns the ErrorInfo reason of err's status, or "".
func Reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}
