package lifecycle

import (
	"fmt"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// SandboxCall is an API call aimed at one sandbox by name.
type SandboxCall int

const (
	// CallGet reads the sandbox (GetSandbox; also its entry in List and Watch).
	CallGet SandboxCall = iota
	// CallAgent is any call that reaches the sandbox's agent: Exec and every
	// file call (read, write, list, stat, remove, mkdir).
	CallAgent
	// CallSuspend, CallResume and CallExtend change its lifecycle.
	CallSuspend
	CallResume
	CallExtend
	// CallDelete deletes it.
	CallDelete
	// CallPause freezes its processes (PauseSandbox).
	CallPause
)

func (c SandboxCall) String() string {
	switch c {
	case CallGet:
		return "get"
	case CallAgent:
		return "exec or file call"
	case CallSuspend:
		return "suspend"
	case CallResume:
		return "resume"
	case CallExtend:
		return "extend"
	case CallDelete:
		return "delete"
	case CallPause:
		return "pause"
	}
	return fmt.Sprintf("call(%d)", int(c))
}

// CallTarget is what MayReach needs to know of the sandbox a call names.
type CallTarget struct {
	Name, Template string
	// Pool is the warm pool the sandbox waits in while unclaimed; empty for
	// a claimed or created sandbox.
	Pool string
}

// ReasonUnclaimedPoolMember is the ErrorInfo reason of a call refused
// because its sandbox is an unclaimed warm pool member, so that clients can
// tell it from other FAILED_PRECONDITION answers without parsing messages.
const ReasonUnclaimedPoolMember = "UNCLAIMED_POOL_MEMBER"

// MayReach decides whether a call may act on a sandbox; when it may not, why
// is the message of the FAILED_PRECONDITION answer. Both backends ask it, so
// they answer alike.
//
// An unclaimed warm pool member belongs to nobody yet: whoever claims it
// next gets it as it is. Anything a caller could leave in it (a file, a
// background process, a changed lifecycle) would be inherited by that
// claimer, so only calls that leave nothing behind reach it:
//
//   - get (and list, watch): members are visible, a pool's state is no secret;
//   - exec and file calls: refused, they are exactly how state is planted;
//   - suspend: refused; a suspended member serves nobody (the pool would only
//     replace it), and suspend/resume would let a caller restart it at will;
//   - resume: refused, for the same reason (a member is never suspended by
//     the API; one suspended otherwise is replaced by its pool);
//   - pause: refused, like suspend: a paused member serves nobody, and
//     its next claimer would get it frozen;
//   - extend: refused; a member waits without a shutdown time until a claim
//     sets one, and a time set on a member would expire it in the pool;
//   - delete: allowed; an operator may retire a member (say, one suspected
//     broken), nothing of it survives, and the pool makes a new one.
func MayReach(call SandboxCall, t CallTarget) (ok bool, why string) {
	if t.Pool == "" {
		return true, ""
	}
	switch call {
	case CallGet, CallDelete:
		return true, ""
	}
	return false, UnclaimedMemberMessage(t)
}

// UnclaimedMemberMessage says why a call on an unclaimed pool member was
// refused and what to do instead.
func UnclaimedMemberMessage(t CallTarget) string {
	return fmt.Sprintf("sandbox %q is an unclaimed member of warm pool %q; claim one first (ClaimSandbox with template %q) and use the sandbox it returns",
		t.Name, t.Pool, t.Template)
}

// ReplaceMember says whether an unclaimed pool member in this phase can no
// longer serve a claim, so its pool deletes it and makes a new one (the pool
// stays at its size):
//
//   - Failed: its agent never answered, or died (pool members are not
//     restarted: a fresh member is as cheap and carries nothing over);
//   - Suspended or Expired: stopped by anything (an idle policy, an
//     operator, a state written by an older version); resuming it would
//     bring back whatever ran in it, and nobody is waiting for it.
//
// Pending and Running members are kept; Terminating ones are already going.
func ReplaceMember(phase v1alpha1.SandboxPhase) bool {
	switch phase {
	case v1alpha1.SandboxFailed, v1alpha1.SandboxSuspended, v1alpha1.SandboxExpired:
		return true
	}
	return false
}
