package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// apiError turns an API server error into a gRPC status that says what was
// being done.
func apiError(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !isAPIStatus(err) {
		return err
	}
	what := fmt.Sprintf(format, args...)
	code := codes.Internal
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case apierrors.IsNotFound(err):
		code = codes.NotFound
	case apierrors.IsAlreadyExists(err):
		code = codes.AlreadyExists
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		code = codes.InvalidArgument
	case apierrors.IsConflict(err):
		code = codes.Aborted
	case apierrors.IsForbidden(err):
		code = codes.PermissionDenied
	case apierrors.IsUnauthorized(err):
		code = codes.Unauthenticated
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		code = codes.Unavailable
	case apierrors.ReasonForError(err) == "":
		// Not an API status: the API server was not reached.
		code = codes.Unavailable
	}
	reason := errinfo.ReasonKubernetesAPIError
	switch {
	case code == codes.DeadlineExceeded:
		reason = errinfo.ReasonCallDeadlineExceeded
	case code == codes.Canceled:
		reason = errinfo.ReasonCallCanceled
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		// A ResourceQuota of the namespace refused the write: the code stays
		// the API server's (Forbidden), the reason says it is a quota.
		reason = errinfo.ReasonQuotaExceeded
	}
	return errinfo.New(code, reason, map[string]string{"kubernetes_reason": string(apierrors.ReasonForError(err))},
		fmt.Sprintf("%s: %v", what, err))
}

// sandboxError is apiError for a write to a sandbox found a moment ago:
// its NotFound means the sandbox was deleted meanwhile, and says so as
// every other answer about a missing sandbox does.
func sandboxError(err error, ns, name, format string, args ...any) error {
	if apierrors.IsNotFound(err) {
		return errinfo.SandboxNotFound(ns, name)
	}
	return apiError(err, format, args...)
}

func isAPIStatus(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}

// waitError explains a wait that ended with the caller's context, with the
// last thing the controller reported about the sandbox (e.g. its pod's
// ImagePullBackOff), so a sandbox that cannot start says why.
func waitError(ctx context.Context, what, last string) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return errinfo.Newf(codes.Canceled, errinfo.ReasonCallCanceled, "%s: canceled", what)
	}
	if last != "" {
		last = " (last status: " + last + ")"
	}
	return errinfo.Newf(codes.DeadlineExceeded, errinfo.ReasonSandboxNotReady, "%s: not ready before the deadline%s; it keeps starting: retry with the same request id, or watch it", what, last)
}
