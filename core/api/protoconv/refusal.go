package protoconv

import (
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
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

// AgentRefusal is the answer of both backends to a call for the agent of
// sandbox ns/name in a phase whose agent cannot be reached and does not
// come back by itself: paused or suspended (when its template does not
// auto-resume), expired (retained) or failed (detail says why); nil in any
// other phase. FAILED_PRECONDITION with the reason of the phase
// (lifecycle.RefusalReason).
func AgentRefusal(ns, name string, phase v1alpha1.SandboxPhase, detail string) error {
	var msg string
	switch phase {
	case v1alpha1.SandboxPaused:
		return errinfo.New(codes.FailedPrecondition, errinfo.ReasonSandboxPaused,
			map[string]string{"sandbox": name, "namespace": ns}, lifecycle.PausedMessage(name))
	case v1alpha1.SandboxSuspended:
		msg = fmt.Sprintf("sandbox %q is suspended and its template does not auto-resume: resume it first", name)
	case v1alpha1.SandboxExpired:
		msg = fmt.Sprintf("sandbox %q has expired (retained): extend and resume it first", name)
	case v1alpha1.SandboxFailed:
		msg = fmt.Sprintf("sandbox %q has failed: %s", name, detail)
	default:
		return nil
	}
	reason := lifecycle.RefusalReason(phase) // a declared reason per phase
	return errinfo.Newf(codes.FailedPrecondition, reason, "%s", msg)
}
