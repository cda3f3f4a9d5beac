package warmpool

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/index"
	"github.com/sandpod/sandpod/core/readyourwrites/rywtest"
)

// A pool's second pass reads a cache that shows none of the members its
// first pass created: it must not create them again, and it must wake when
// those creates would lapse (so a lost watch event cannot stall the pool).
func TestPoolOverALaggingCache(t *testing.T) {
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "py"}}
	pool := &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pool-uid"}}
	pool.Spec.TemplateRef.Name, pool.Spec.Replicas = "py", 3
	creates := 0
	build := func(count bool) client.Client {
		b := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.SandboxWarmPool{}).
			WithObjects(tmpl.DeepCopy(), pool.DeepCopy())
		if err := index.Register(context.Background(), builderIndexer{b}); err != nil {
			t.Fatal(err)
		}
		if count {
			b = b.WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
				creates++
				return c.Create(ctx, obj, o...)
			}})
		}
		return b.Build()
	}
	server, cache := build(true), build(false) // the cache: as before any write, for good
	r := &Reconciler{Client: rywtest.Lagging{Client: server, Cache: cache}, Clock: clock.RealClock{}, Expectations: NewExpectations(time.Minute)}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}
	var res reconcile.Result
	for pass := 1; pass <= 2; pass++ {
		if res, err = r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	if creates != 3 {
		t.Errorf("%d members created for a pool of 3, want 3", creates)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Errorf("requeue after %s, want by the time the creates lapse (1m)", res.RequeueAfter)
	}
}

type builderIndexer struct{ b *fake.ClientBuilder }

func (x builderIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	x.b.WithIndex(obj, field, extract)
	return nil
}
