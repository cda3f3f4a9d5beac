package protoconv

import (
	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// ErrorDomain is the ErrorInfo domain of sandpod's own error reasons.
const ErrorDomain = errinfo.Domain

// Refusal is the answer of both backends to a call that
// lifecycle.MayReach refused (why is its reason): FAILED_PRECONDITION with
// an ErrorInfo that names the reason, pool and template, so a client can
// react (claim instead) without parsing the message.
func Refusal(t lifecycle.CallTarget, why string) error {
	return errinfo.New(codes.FailedPrecondition, errinfo.ReasonUnclaimedPoolMember, map[string]string{
		"sandbox": t.Name, "pool": t.Pool, "template": t.Template,
	}, why)
}
