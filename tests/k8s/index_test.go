package k8s_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	"github.com/sandpod/sandpod/core/controller/index"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// TestPoolMembersFromTheInformersIndex: the controller reads a pool's
// members straight from the informer's field index (index.FromIndex, as
// controller-runtime names and keys it) rather than through a cache List,
// which copies every member. A controller-runtime that keyed its indexes
// differently would make this fast path find nothing (index.Sandboxes
// would then fall back to a List, right but slow): this test says so.
func TestPoolMembersFromTheInformersIndex(t *testing.T) {
	harness.Skip(t, env)
	ns, other := env.Namespace(t), env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	opts := controller.CacheOptions()
	opts.Scheme = scheme
	// Every namespace, as the controller watches (a cache of a few
	// namespaces wraps its informers, and index.Sandboxes lists instead).
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.Register(ctx, c); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	for _, sb := range []*v1alpha1.Sandbox{
		indexedMember(ns, "m1", "pool"), indexedMember(ns, "m2", "pool"), indexedMember(ns, "m3", "another-pool"), indexedMember(other, "m1", "pool"),
	} {
		if err := env.Client.Create(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 30*time.Second, "both members of ns/pool from the index", func() (bool, string) {
		got, ok := index.FromIndex(ctx, c, ns, index.SandboxPool, "pool")
		var names []string
		for _, sb := range got {
			if sb.Namespace != ns || sb.Labels[v1alpha1.LabelPool] != "pool" {
				t.Fatalf("index gave %s/%s of pool %q", sb.Namespace, sb.Name, sb.Labels[v1alpha1.LabelPool])
			}
			names = append(names, sb.Name)
		}
		return ok && len(got) == 2, fmt.Sprintf("fast path %v, got %v", ok, names)
	})
	listed, err := index.Sandboxes(ctx, c, c, ns, index.SandboxPool, "another-pool")
	if err != nil || len(listed) != 1 || listed[0].Name != "m3" {
		t.Fatalf("Sandboxes of another-pool: %v, %v", listed, err)
	}
}

func indexedMember(ns, name, pool string) *v1alpha1.Sandbox {
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.LabelPool: pool}},
		Spec:       v1alpha1.SandboxSpec{PodTemplate: podTemplate()},
	}
}
