package kube

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sandpod/sandpod/core/adopt"
	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/core/readyourwrites/rywtest"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The calls after a warm claim, over a cache that shows none of this
// bridge's writes: they see the sandbox as claimed (its env), a retry of the
// claim finds it (and takes nothing else), and once deleted it is gone.
func TestBridgeReadsItsWritesOverALaggingCache(t *testing.T) {
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "py"}}
	pool := &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pool-uid"}}
	var objs []client.Object
	var members []*v1alpha1.Sandbox
	for i, name := range []string{"p-1", "p-2"} {
		m := adopt.NewMember(pool, tmpl, lifecycle.TemplateHash(tmpl.Spec))
		m.Name, m.GenerateName, m.UID = name, "", types.UID("uid-"+name)
		m.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Duration(2-i) * time.Minute))
		m.Status.Phase = v1alpha1.SandboxRunning
		members = append(members, m)
		objs = append(objs, m)
	}
	objs = append(objs, tmpl)
	build := func() client.WithWatch {
		b := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.Sandbox{}).
			WithIndex(&v1alpha1.Sandbox{}, indexRequestID, func(o client.Object) []string {
				if id := o.GetAnnotations()[v1alpha1.AnnotationRequestID]; id != "" {
					return []string{id}
				}
				return nil
			})
		for _, o := range objs {
			b = b.WithObjects(o.DeepCopyObject().(client.Object))
		}
		return b.Build()
	}
	server, cache := build(), build() // the cache: as before any write, for good
	recent := newRecentWrites()
	b := &Backend{
		client: rywtest.Lagging{Client: server, Cache: cache}, live: server,
		hub: newHub(""), taken: adopt.NewTaken(recent.store), members: adopt.NewIndex(), recent: recent, now: time.Now,
	}
	for _, m := range members {
		b.members.Update(m, false)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &sandpodv1.ClaimSandboxRequest{Namespace: "ns", Template: "py", RequestId: "r1", Env: map[string]string{"TASK": "1"}}

	first, warm, err := b.ClaimSandbox(ctx, req)
	if err != nil || !warm {
		t.Fatalf("claim: %v (warm %v)", err, warm)
	}
	got, err := b.GetSandbox(ctx, "ns", first.GetName())
	if err != nil || !got.GetClaimed() || !slices.Contains(got.GetEnvKeys(), "TASK") {
		t.Errorf("get right after the claim: %v (%v), want it claimed with TASK", got, err)
	}
	again, _, err := b.ClaimSandbox(ctx, req)
	if err != nil || again.GetName() != first.GetName() {
		t.Errorf("the claim retried: %v (%v), want %s", again.GetName(), err, first.GetName())
	}
	var list v1alpha1.SandboxList
	if err := server.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, sb := range list.Items {
		if !isPoolMember(&sb) {
			claimed++
		}
	}
	if claimed != 1 || len(list.Items) != 2 {
		t.Errorf("%d of %d sandboxes claimed for one request id, want 1 of 2", claimed, len(list.Items))
	}
	if err := b.DeleteSandbox(ctx, "ns", first.GetName()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetSandbox(ctx, "ns", first.GetName()); status.Code(err) != codes.NotFound {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
	listed, err := b.ListSandboxes(ctx, "ns", labels.Everything(), true)
	if err != nil || len(listed) != 1 || listed[0].GetName() == first.GetName() {
		t.Errorf("list after delete: %v (%v), want the other member only", listed, err)
	}
}
