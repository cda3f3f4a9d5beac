// Package errinfo makes the gRPC statuses of sandpod's server, each with a
// google.rpc.ErrorInfo whose reason (reasons.go) tells answers that share a
// code apart without parsing messages: a NOT_FOUND about the sandbox itself
// (claim another) from one about a file in it (write it first) or about a
// template (fix the name). It depends on nothing but gRPC, so the agent
// uses it too.
package errinfo

import (
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of sandpod's own reasons.
const Domain = "sandpod.dev"

// New returns a status error of code with an ErrorInfo of reason. Server
// code makes every status through New, Newf or Invalid, never with
// status.Error itself (TestServerStatusesCarryReasons), so no answer
// leaves without a reason.
func New(code codes.Code, reason Why, metadata map[string]string, msg string) error {
	st := status.New(code, msg)
	withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: string(reason), Domain: Domain, Metadata: metadata})
	if err != nil {
		return st.Err() // the details are a convenience; the code and message stand alone
	}
	return withInfo.Err()
}

// Newf is New without metadata, with a formatted message.
func Newf(code codes.Code, reason Why, format string, args ...any) error {
	return New(code, reason, nil, fmt.Sprintf(format, args...))
}

// Invalid is the INVALID_ARGUMENT of a request field, with the field in
// the metadata and at the start of the message ("ttl: must be positive").
func Invalid(reason Why, field, format string, args ...any) error {
	return New(codes.InvalidArgument, reason, map[string]string{"field": field}, field+": "+fmt.Sprintf(format, args...))
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
func Reason(err error) Why {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return Why(info.GetReason())
		}
	}
	return ""
}

// Metadata returns the ErrorInfo metadata of err's status, or nil.
func Metadata(err error) map[string]string {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()
		}
	}
	return nil
}
