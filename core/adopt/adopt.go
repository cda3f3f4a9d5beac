// Package adopt is the warm take: which pool member a claim takes
// (candidates), how concurrent claims of one process stay off each other's
// member (reservation, Taken), the single guarded write that takes it
// (TakeWrite), and what a refused write means (someone else took it, or it
// is gone: try the next). It knows Kubernetes objects and no reconciler, so
// both the bridge's ClaimSandbox and the SandboxClaim reconciler use it.
package adopt

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Writer is the one API call a take makes (a client.Client is one).
type Writer interface {
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error
}

// Next returns the best member to try next among those skip does not refuse
// (false: none left). The member may be the informer cache's own object: it
// is only read.
type Next func(skip func(name string) bool) (*v1alpha1.Sandbox, bool)

// Adoption is one claim's warm take.
type Adoption struct {
	Writer Writer
	// Taken spreads the claims of this process over the pool (nil: no
	// reservations, every claim tries the best member first).
	Taken *Taken
	// Next chooses the member to try (Candidates, or an index's pick).
	Next Next
	// Apply rewrites a copy of the member as taken (Take, or a claim's Bind).
	Apply func(*v1alpha1.Sandbox)
	// Refused, if set, is told of each member whose write was refused.
	Refused func(name string, err error)
}

// Run tries members, best first, each with one patch guarded by its
// resourceVersion: a conflict (another taker won) or not-found (it is gone)
// moves on to the next. It returns the taken sandbox, or nil when no member
// is left; any other error comes back with the name of the member whose
// write failed.
func (a Adoption) Run(ctx context.Context, ns string) (sb *v1alpha1.Sandbox, member string, err error) {
	tried := map[string]bool{}
	skip := func(name string) bool { return tried[name] || (a.Taken != nil && a.Taken.Held(ns, name)) }
	for {
		m, ok := a.Next(skip)
		if !ok {
			return nil, "", nil
		}
		name := m.Name
		tried[name] = true
		if a.Taken != nil && !a.Taken.Reserve(ns, name) {
			continue // another claim of this process reserved it since the pick
		}
		// A merge patch carrying the member's resourceVersion: the same
		// optimistic concurrency as an update, with a smaller request.
		sb, p, err := TakeWrite(m, a.Apply)
		if err == nil {
			err = a.Writer.Patch(ctx, sb, p)
		}
		if a.Taken != nil {
			if err == nil {
				a.Taken.Took(sb)
			} else {
				a.Taken.Release(ns, name)
			}
		}
		switch {
		case err == nil:
			return sb, name, nil
		case Refused(err):
			if a.Refused != nil {
				a.Refused(name, err)
			}
			continue
		default:
			return nil, name, err
		}
	}
}

// Refused says whether a take's write failed because the member is no
// longer there to take (another taker's write won, or it was deleted), so
// the next member should be tried.
func Refused(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err)
}

// Candidates is a Next over members (read-only, e.g. the cache's own
// objects), in lifecycle.ClaimCandidates order for a template whose current
// hash is hash. Each call is one pass over members (BestCandidate), with no
// list, map or sort built: a claim usually takes the first member it tries,
// and building the ordered list of a pool of 500 for each claim was a
// tenth of the controller's garbage in a burst of claims.
func Candidates(members []*v1alpha1.Sandbox, hash string) Next {
	return func(skip func(string) bool) (*v1alpha1.Sandbox, bool) {
		var best *v1alpha1.Sandbox
		views := func(yield func(lifecycle.PoolMember) bool) {
			for _, sb := range members {
				if !yield(ToPoolMember(sb)) {
					return
				}
			}
		}
		name, ok := lifecycle.BestCandidate(views, hash, skip)
		if !ok {
			return nil, false
		}
		for _, sb := range members {
			if sb.Name == name {
				best = sb
				break
			}
		}
		return best, best != nil
	}
}

// Uncertain says whether a take's write failed without telling whether it
// was applied: the API server may have stored the patch before the
// connection, the server or the caller's deadline failed (a kube-apiserver
// killed mid-burst does this). The member may then be the claim's already,
// and the cache may not show it for a while: a retry of the same claim must
// read the member from the API server before it takes another, or the
// claim ends with two sandboxes. An answer from the API server (a refusal,
// a conflict, a throttle) says the patch was not applied.
func Uncertain(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code >= 500 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
	}
	return true
}
