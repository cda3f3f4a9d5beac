package sandpod

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
)

// What a handle learns from an exec, file, code or preview call's outcome.
func TestObserved(t *testing.T) {
	refused := func(reason string) error {
		return &Error{Op: "exec", Code: codes.FailedPrecondition, Reason: reason}
	}
	cases := map[string]struct {
		last         Phase
		err          error
		phase        Phase
		set, refresh bool
	}{
		"running, went through: nothing to do":            {PhaseRunning, nil, PhaseRunning, false, false},
		"paused, went through (auto-resume): refresh":     {PhasePaused, nil, PhasePaused, false, true},
		"suspended, went through: refresh":                {PhaseSuspended, nil, PhaseSuspended, false, true},
		"pending, went through: refresh":                  {PhasePending, nil, PhasePending, false, true},
		"running, refused as paused: paused":              {PhaseRunning, refused(ReasonSandboxPaused), PhasePaused, true, false},
		"running, refused as suspended: suspended":        {PhaseRunning, refused("SANDBOX_SUSPENDED"), PhaseSuspended, true, false},
		"running, refused as expired: expired":            {PhaseRunning, refused("SANDBOX_EXPIRED"), PhaseExpired, true, false},
		"paused, refused as paused: unchanged":            {PhasePaused, refused(ReasonSandboxPaused), PhasePaused, false, false},
		"a wrapped refusal counts":                        {PhaseRunning, errors.Join(errors.New("ctx"), refused("SANDBOX_FAILED")), PhaseFailed, true, false},
		"another error says nothing about the phase":      {PhasePaused, &Error{Code: codes.Unavailable}, PhasePaused, false, false},
		"a file not found is the agent's answer: refresh": {PhasePaused, &Error{Code: codes.NotFound, Reason: "FILE_NOT_FOUND"}, PhasePaused, false, true},
		"a context not found too":                         {PhaseSuspended, &Error{Code: codes.NotFound, Reason: "CODE_CONTEXT_NOT_FOUND"}, PhaseSuspended, false, true},
		"a sandbox not found says nothing of the phase":   {PhasePaused, &Error{Code: codes.NotFound, Reason: "SANDBOX_NOT_FOUND"}, PhasePaused, false, false},
		"a file not found on a running handle: no call":   {PhaseRunning, &Error{Code: codes.NotFound, Reason: "FILE_NOT_FOUND"}, PhaseRunning, false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			phase, set, refresh := observed(tc.last, tc.err)
			if phase != tc.phase || set != tc.set || refresh != tc.refresh {
				t.Errorf("got %s set=%v refresh=%v, want %s set=%v refresh=%v", phase, set, refresh, tc.phase, tc.set, tc.refresh)
			}
		})
	}
}
