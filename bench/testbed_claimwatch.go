package main

// SandboxClaim → Ready as a watch sees it, for sandpod's claims and, when
// installed, agent-sandbox's: the first event that shows a claim's Ready
// condition True is its time. A watch, not a poll: a 100 ms poll added up
// to 100 ms to the figure it timed.

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// The two products whose claims are watched.
const (
	prodSandpod = "sandpod"
	prodASB     = "agent-sandbox"
)

// claimSeen is what a watch saw of one claim.
type claimSeen struct {
	ready   time.Time // first seen Ready; zero until then
	warm    bool      // served by a warm pool member
	sandbox string    // the claimed sandbox's name
}

type claimWatch struct {
	mu   sync.Mutex
	seen map[string]claimSeen // product + "/" + claim name
	stop context.CancelFunc
}

// watchClaims watches ns's sandpod SandboxClaims, and agent-sandbox's when
// asb is true.
func watchClaims(ctx context.Context, kc client.WithWatch, ns string, asb bool) (*claimWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &claimWatch{seen: map[string]claimSeen{}, stop: cancel}
	sp, err := kc.Watch(ctx, &v1alpha1.SandboxClaimList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		return nil, err
	}
	go w.follow(ctx, sp, func(obj any) (string, bool, claimSeen) {
		c, ok := obj.(*v1alpha1.SandboxClaim)
		if !ok {
			return "", false, claimSeen{}
		}
		return prodSandpod + "/" + c.Name, meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady),
			claimSeen{warm: c.Status.Warm, sandbox: c.Status.SandboxName}
	})
	if !asb {
		return w, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: asbExtGroup, Version: "v1beta1", Kind: "SandboxClaimList"})
	ab, err := kc.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		cancel()
		return nil, err
	}
	go w.follow(ctx, ab, func(obj any) (string, bool, claimSeen) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return "", false, claimSeen{}
		}
		ready, seen := asbClaimState(u)
		return prodASB + "/" + u.GetName(), ready, seen
	})
	return w, nil
}

// asbClaimState reads an agent-sandbox SandboxClaim: Ready, and the
// sandbox it holds. Its controller names a cold sandbox after the claim;
// an adopted pool member keeps its own name (as the controller's own
// launch-type logic decides).
func asbClaimState(u *unstructured.Unstructured) (bool, claimSeen) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	name, _, _ := unstructured.NestedString(u.Object, "status", "sandbox", "name")
	return conditionTrue(conds, "Ready"), claimSeen{sandbox: name, warm: name != "" && name != u.GetName()}
}

func (w *claimWatch) follow(ctx context.Context, wi watch.Interface, read func(any) (string, bool, claimSeen)) {
	followEvents(ctx, wi, func(now time.Time, obj any) {
		key, ready, cs := read(obj)
		if key == "" {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if old := w.seen[key]; !old.ready.IsZero() {
			cs.ready = old.ready // the first Ready counts
		} else if ready {
			cs.ready = now
		}
		w.seen[key] = cs
	})
}

// readyAt waits (polling the watch's record, not the API) until the claim
// prod/name was seen Ready.
func (w *claimWatch) readyAt(ctx context.Context, prod, name string) (claimSeen, error) {
	var cs claimSeen
	err := waitFor(ctx, 3*time.Minute, prod+" claim "+name+" Ready", func() bool {
		w.mu.Lock()
		cs = w.seen[prod+"/"+name]
		w.mu.Unlock()
		return !cs.ready.IsZero()
	})
	return cs, err
}
