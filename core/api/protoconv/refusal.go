package protoconv

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/lifecycle"
)

// ErrorDomain is the ErrorInfo domain of sandpod's own error reasons.
const ErrorDomain = "sandpod.dev"

// Refusal is the answer of both backends to a call that
// lifecycle.MayReach refused (why is its reason): FAILED_PRECONDITION with
// an ErrorInfo that names the reason, pool and template, so a client can
// react (claim instead) without parsing the message.
func Refusal(t lifecycle.CallTarget, why string) error {
	st := status.New(codes.FailedPrecondition, why)
	withInfo, err := st.WithDetails(&errdetails.ErrorInfo{
		Reason: lifecycle.ReasonUnclaimedPoolMember,
		Domain: ErrorDomain,
		Metadata: map[string]string{
			"sandbox": t.Name, "pool": t.Pool, "template": t.Template,
		},
	})
	if err != nil {
		return st.Err() // the details are a convenience; the code and message stand alone
	}
	return withInfo.Err()
}
