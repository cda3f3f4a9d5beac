package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// callTarget is the sandbox as lifecycle.MayReach sees it: an unclaimed
// warm pool member (the pool label, no claim label) names its pool.
func callTarget(sb *v1alpha1.Sandbox) lifecycle.CallTarget {
	t := lifecycle.CallTarget{Name: sb.Name, Template: sb.Labels[v1alpha1.LabelTemplate]}
	if sb.Spec.TemplateRef != nil {
		t.Template = sb.Spec.TemplateRef.Name
	}
	if isPoolMember(sb) {
		t.Pool = sb.Labels[v1alpha1.LabelPool]
	}
	return t
}

// reach returns the sandbox a call may act on, or FAILED_PRECONDITION when
// it is an unclaimed warm pool member the call may not reach (the same rule
// and answer as the local engine). The cache may not show yet a claim made
// elsewhere (another bridge, a SandboxClaim applied with kubectl), and a
// claim is never undone: so before refusing, reach reads the sandbox from
// the API server and answers from that, and the call goes on with it.
func (b *Backend) reach(ctx context.Context, call lifecycle.SandboxCall, sb *v1alpha1.Sandbox) (*v1alpha1.Sandbox, error) {
	if ok, _ := lifecycle.MayReach(call, callTarget(sb)); ok {
		return sb, nil
	}
	live := &v1alpha1.Sandbox{}
	if err := b.live.Get(ctx, client.ObjectKeyFromObject(sb), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errinfo.SandboxNotFound(sb.Namespace, sb.Name)
		}
		return nil, apiError(err, "read sandbox %q", sb.Name)
	}
	if live.DeletionTimestamp != nil {
		return nil, errinfo.SandboxNotFound(sb.Namespace, sb.Name)
	}
	t := callTarget(live)
	if ok, why := lifecycle.MayReach(call, t); !ok {
		return nil, protoconv.Refusal(t, why)
	}
	return live, nil
}
