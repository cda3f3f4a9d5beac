package claim

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/adopt"
	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/index"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/core/readyourwrites/rywtest"
)

// A claim's second pass reads a cache that shows neither the member its
// first pass adopted nor the status it wrote: it must find that member (and
// adopt no second one) and not write the same status again. When the first
// status write failed, the second pass still finds the member it adopted.
func TestClaimOverALaggingCache(t *testing.T) {
	t.Run("status written", func(t *testing.T) { claimOverALaggingCache(t, false) })
	t.Run("status write failed", func(t *testing.T) { claimOverALaggingCache(t, true) })
}

func claimOverALaggingCache(t *testing.T, failFirstStatus bool) {
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "py"}}
	pool := &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pool-uid"}}
	pool.Spec.TemplateRef.Name = "py"
	objs := []client.Object{tmpl, pool}
	for _, name := range []string{"p-1", "p-2"} {
		m := adopt.NewMember(pool, tmpl, lifecycle.TemplateHash(tmpl.Spec))
		m.Name, m.GenerateName, m.UID = name, "", types.UID(name)
		m.Status.Phase = v1alpha1.SandboxRunning
		objs = append(objs, m)
	}
	c := &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "claim-uid"}}
	c.Spec.TemplateRef.Name = "py"
	objs = append(objs, c)

	var takes, statusWrites int
	build := func(count bool) client.Client {
		b := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.Sandbox{}, &v1alpha1.SandboxClaim{})
		for _, o := range objs {
			b = b.WithObjects(o.DeepCopyObject().(client.Object))
		}
		if err := index.Register(context.Background(), builderIndexer{b}); err != nil {
			t.Fatal(err)
		}
		if count {
			b = b.WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
					takes++
					return cl.Patch(ctx, obj, p, o...)
				},
				SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
					statusWrites++
					if failFirstStatus && statusWrites == 1 {
						return errors.New("connection reset")
					}
					return cl.SubResource(sub).Patch(ctx, obj, p, o...)
				},
			})
		}
		return b.Build()
	}
	server := build(true)
	cache := build(false) // as it was before any write, for good
	// The index as the cache shows the members, for good.
	members := adopt.NewIndex()
	for _, o := range objs {
		if sb, ok := o.(*v1alpha1.Sandbox); ok {
			members.Update(sb, false)
		}
	}
	r := &Reconciler{Client: rywtest.Lagging{Client: server, Cache: cache}, APIReader: server, Clock: clock.RealClock{}, Taken: adopt.NewTaken(nil), Members: members}

	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c"}}
	for pass := 1; pass <= 2; pass++ {
		if _, err := r.Reconcile(context.Background(), req); err != nil && !(failFirstStatus && pass == 1) {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	if takes != 1 {
		t.Errorf("%d members adopted for one claim, want 1", takes)
	}
	if want := map[bool]int{false: 1, true: 2}[failFirstStatus]; statusWrites != want {
		t.Errorf("%d claim status writes, want %d", statusWrites, want)
	}
	got := &v1alpha1.SandboxClaim{}
	if err := server.Get(context.Background(), req.NamespacedName, got); err != nil || got.Status.SandboxName != "p-1" {
		t.Errorf("claim status %+v (%v), want bound to p-1", got.Status, err)
	}

	// The member is deleted, and the cache has seen that (not the claim's
	// status): the claim reports it gone, whatever this process wrote to it.
	for _, cl := range []client.Client{server, cache} {
		if err := cl.Delete(context.Background(), &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := server.Get(context.Background(), req.NamespacedName, got); err != nil || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionFinished) {
		t.Errorf("claim status %+v (%v) after its sandbox was deleted, want Finished", got.Status, err)
	}
}

type builderIndexer struct{ b *fake.ClientBuilder }

func (x builderIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	x.b.WithIndex(obj, field, extract)
	return nil
}
