package apicost_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/patch"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// BenchmarkClaimWriteCost splits what kube-apiserver spends on a warm
// SandboxClaim's own two writes (the third, the take of its member, is
// BenchmarkClaimPatchCost's "member"):
//
//   - create: the user's create of the claim (as the kwok bench makes it);
//   - status-tracked: the claim reconciler's status patch of a warm bind
//     (claim.ComputeStatus, patch.Status) on a claim as its user created it,
//     so with a managedFields entry: the write is tracked;
//   - status-untracked: the same patch on claims whose managedFields were
//     cleared first: what tracking a user's claim costs.
//
// No controller runs (the claims name no template). 32 writers; run with a
// fixed count:
//
//	SANDPOD_KUBE_BIN=$(hack/kube/build.sh --print) go test -run '^$' -bench ClaimWriteCost -benchtime 300x ./bench/apicost/
//
// Compare the apiserver-ms/op columns, not ns/op (the machine is shared).
func BenchmarkClaimWriteCost(b *testing.B) {
	harness.Skip(b, env)
	ns := env.Namespace(b)
	create := func(prefix string, n int) []*v1alpha1.SandboxClaim {
		out := make([]*v1alpha1.SandboxClaim, n)
		parallel(b, n, func(i int) error {
			out[i] = harness.Claim(ns, fmt.Sprintf("%s-%d", prefix, i), "none")
			return env.Client.Create(ctx, out[i])
		})
		return out
	}
	statusRun := func(tracked bool) func(b *testing.B) {
		return func(b *testing.B) {
			claims := create(fmt.Sprintf("st-%v-%d", tracked, time.Now().UnixNano()%100000), b.N)
			if !tracked {
				parallel(b, b.N, func(i int) error {
					return env.Client.Patch(ctx, claims[i], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`)))
				})
			}
			measurePatches(b, b.N, func(i int) error {
				c := claims[i]
				st := warmBindStatus(c)
				p, err := patch.Status(c.Status, st)
				if err != nil {
					return err
				}
				return env.Client.Status().Patch(ctx, c.DeepCopy(), p)
			})
		}
	}
	b.Run("create", func(b *testing.B) {
		prefix := fmt.Sprintf("cr-%d", time.Now().UnixNano()%100000)
		measurePatches(b, b.N, func(i int) error {
			return env.Client.Create(ctx, harness.Claim(ns, fmt.Sprintf("%s-%d", prefix, i), "none"))
		})
	})
	b.Run("status-tracked", statusRun(true))
	b.Run("status-untracked", statusRun(false))
}

// warmBindStatus is the status the claim reconciler writes when it binds c
// to a ready warm member (claim.ComputeStatus of a warm adoption).
func warmBindStatus(c *v1alpha1.SandboxClaim) v1alpha1.SandboxClaimStatus {
	now := metav1.NewTime(time.Now())
	return v1alpha1.SandboxClaimStatus{
		ObservedGeneration: c.Generation, SandboxName: "pool-" + c.Name, Warm: true,
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSandboxReady, ObservedGeneration: c.Generation, LastTransitionTime: now},
			{Type: v1alpha1.ConditionFinished, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRunning, ObservedGeneration: c.Generation, LastTransitionTime: now},
		},
	}
}
