package kube

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sandpod/sandpod/core/api/errinfo"
	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

func poolSandbox(labels map[string]string) *v1alpha1.Sandbox {
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool-abcde", Labels: labels},
		Spec:       v1alpha1.SandboxSpec{TemplateRef: &v1alpha1.TemplateRef{Name: "py"}},
	}
}

// TestReach is the Kubernetes side of lifecycle.MayReach: an unclaimed
// member (pool label, no claim label) refuses what the local engine
// refuses, with the same message and ErrorInfo; a claim the cache does not
// show yet is found on the API server and lets the call through.
func TestReach(t *testing.T) {
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	member := poolSandbox(map[string]string{v1alpha1.LabelPool: "pool", v1alpha1.LabelTemplate: "py"})
	adopted := poolSandbox(map[string]string{v1alpha1.LabelTemplate: "py"}) // adopt.Take removed the pool label
	bound := poolSandbox(map[string]string{v1alpha1.LabelPool: "pool", v1alpha1.LabelClaim: "c"})

	cases := map[string]struct {
		cached, live *v1alpha1.Sandbox
		call         lifecycle.SandboxCall
		wantCode     codes.Code
	}{
		"exec on a member":                          {member, member, lifecycle.CallAgent, codes.FailedPrecondition},
		"suspend on a member":                       {member, member, lifecycle.CallSuspend, codes.FailedPrecondition},
		"resume on a member":                        {member, member, lifecycle.CallResume, codes.FailedPrecondition},
		"extend on a member":                        {member, member, lifecycle.CallExtend, codes.FailedPrecondition},
		"delete of a member":                        {member, member, lifecycle.CallDelete, codes.OK},
		"get of a member":                           {member, member, lifecycle.CallGet, codes.OK},
		"exec on an adopted sandbox":                {adopted, adopted, lifecycle.CallAgent, codes.OK},
		"exec on a sandbox a SandboxClaim holds":    {bound, bound, lifecycle.CallAgent, codes.OK},
		"exec right after a claim the cache misses": {member, adopted, lifecycle.CallAgent, codes.OK},
		"exec on a member deleted meanwhile":        {member, nil, lifecycle.CallAgent, codes.NotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live := fake.NewClientBuilder().WithScheme(scheme)
			if tc.live != nil {
				live = live.WithObjects(tc.live.DeepCopy())
			}
			b := &Backend{live: live.Build()}
			got, err := b.reach(context.Background(), tc.call, tc.cached.DeepCopy())
			if status.Code(err) != tc.wantCode {
				t.Fatalf("reach = %v, want %s", err, tc.wantCode)
			}
			if err == nil && got == nil {
				t.Fatal("allowed, yet no sandbox to go on with")
			}
			if tc.wantCode == codes.NotFound && errinfo.Reason(err) != errinfo.ReasonSandboxNotFound {
				t.Errorf("NOT_FOUND %v without the reason %s", err, errinfo.ReasonSandboxNotFound)
			}
			if tc.wantCode != codes.FailedPrecondition {
				return
			}
			st := status.Convert(err)
			if want := `sandbox "pool-abcde" is an unclaimed member of warm pool "pool"; claim one first (ClaimSandbox with template "py")`; !strings.HasPrefix(st.Message(), want) {
				t.Errorf("message %q, want it to start with %q", st.Message(), want)
			}
			if info, _ := firstDetail(st).(*errdetails.ErrorInfo); info.GetReason() != lifecycle.ReasonUnclaimedPoolMember || info.GetMetadata()["pool"] != "pool" {
				t.Errorf("details %v, want ErrorInfo %s", st.Details(), lifecycle.ReasonUnclaimedPoolMember)
			}
		})
	}
}

func firstDetail(st *status.Status) any {
	if d := st.Details(); len(d) > 0 {
		return d[0]
	}
	return nil
}
