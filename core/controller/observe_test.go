package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/claim"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

// TestObserverDropsCaughtUpWrites: every kind of informer event reaches
// the store, a tombstone's object included, and a write leaves the store
// once an event shows its version (not an older one).
func TestObserverDropsCaughtUpWrites(t *testing.T) {
	at := func(rv string) *v1alpha1.Sandbox {
		return &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: "u", ResourceVersion: rv}}
	}
	cases := map[string]struct {
		event func(h toolscache.ResourceEventHandler)
		kept  bool
	}{
		"add of the written version":    {func(h toolscache.ResourceEventHandler) { h.OnAdd(at("7"), false) }, false},
		"update to the written version": {func(h toolscache.ResourceEventHandler) { h.OnUpdate(at("6"), at("7")) }, false},
		"update to a later version":     {func(h toolscache.ResourceEventHandler) { h.OnUpdate(at("7"), at("9")) }, false},
		"update to an older version":    {func(h toolscache.ResourceEventHandler) { h.OnUpdate(at("5"), at("6")) }, true},
		"delete":                        {func(h toolscache.ResourceEventHandler) { h.OnDelete(at("6")) }, false},
		"delete seen as a tombstone": {func(h toolscache.ResourceEventHandler) {
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/sb", Obj: at("6")})
		}, false},
		"another kind's event": {func(h toolscache.ResourceEventHandler) {
			h.OnAdd(&v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", ResourceVersion: "9"}}, false)
		}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var store readyourwrites.Store[*v1alpha1.Sandbox]
			store.Put(at("7"))
			tc.event(observer(store.Observe))
			if got := store.Has("ns", "sb"); got != tc.kept {
				t.Errorf("entry kept %v, want %v", got, tc.kept)
			}
		})
	}
}

// TestClaimTakesKeptWithoutManagedFields: the claim reconciler's store
// keeps a take's answer as the cache keeps sandboxes, and leaves the
// answer itself as it was.
func TestClaimTakesKeptWithoutManagedFields(t *testing.T) {
	taken := claim.NewTaken(nil)
	answer := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: "u", ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "sandpod"}}}}
	taken.Took(answer)
	kept := taken.Written().Get("ns", "sb", nil)
	if kept == nil || kept.ManagedFields != nil || len(answer.ManagedFields) != 1 {
		t.Fatalf("kept %+v, answer %+v", kept, answer)
	}
}
