package sandbox

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/readyourwrites"
	"github.com/sandpod/sandpod/core/readyourwrites/rywtest"
)

// A status written over resourceVersion 1 (so the write is at 2) is what a
// pass reads until the cache shows it.
func TestWrittenStatuses(t *testing.T) {
	sbAt := func(uid, rv string, phase v1alpha1.SandboxPhase) *v1alpha1.Sandbox {
		return &v1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: typesUID(uid), ResourceVersion: rv},
			Status:     v1alpha1.SandboxStatus{Phase: phase},
		}
	}
	cases := map[string]struct {
		cached    *v1alpha1.Sandbox
		wantPhase v1alpha1.SandboxPhase
		forgotten bool
	}{
		"cache has not seen the write": {cached: sbAt("u", "1", ""), wantPhase: v1alpha1.SandboxPending},
		"cache caught up":              {cached: sbAt("u", "2", v1alpha1.SandboxPending), wantPhase: v1alpha1.SandboxPending, forgotten: true},
		"another write since":          {cached: sbAt("u", "3", v1alpha1.SandboxRunning), wantPhase: v1alpha1.SandboxRunning, forgotten: true},
		"a new sandbox of that name":   {cached: sbAt("v", "1", ""), wantPhase: "", forgotten: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var w readyourwrites.Store[*v1alpha1.Sandbox]
			w.Put(sbAt("u", "2", v1alpha1.SandboxPending))
			got := w.Get("ns", "sb", tc.cached)
			if got.Status.Phase != tc.wantPhase {
				t.Errorf("phase %q, want %q", got.Status.Phase, tc.wantPhase)
			}
			if ok := w.Has("ns", "sb"); ok == tc.forgotten {
				t.Errorf("remembered = %v, want %v", ok, !tc.forgotten)
			}
		})
	}
}

// A pass that reads a cache which has not caught up with the previous
// pass's status write must not send that write again.
func TestStatusNotWrittenTwiceOverALaggingCache(t *testing.T) {
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: "u"}}
	patches := 0
	server := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sb.DeepCopy()).
		WithStatusSubresource(&v1alpha1.Sandbox{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, o...)
		}}).Build()
	// The cache: the sandbox as it was before any status write, for good.
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sb.DeepCopy()).Build()
	r := &Reconciler{Client: rywtest.Lagging{Client: server, Cache: cache}, Clock: clock.RealClock{}}
	key := types.NamespacedName{Namespace: "ns", Name: "sb"}
	st := v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxPending, Message: "waiting for the pod"}

	for pass := 1; pass <= 2; pass++ {
		got, err := r.get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.writeStatus(context.Background(), got, st); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 1 {
		t.Errorf("%d status patches for one status, want 1", patches)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
