package controller

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/claim"
	"github.com/sandpod/sandpod/core/controller/sandbox"
)

// observeWrites tells the sandbox reconciler's and the claim reconciler's
// claim read-your-writes stores of every sandbox and claim event, so a
// write leaves its store as soon as the cache shows it
// (readyourwrites.Store.Observe; the claim reconciler's sandbox store is
// fed by watchMembers). The handlers run after
// the informer has stored the object, so a pass never finds the entry gone
// and the cache still behind.
func observeWrites(ctx context.Context, informers cache.Informers, sbr *sandbox.Reconciler, cr *claim.Reconciler) error {
	sandboxes, err := informers.GetInformer(ctx, &v1alpha1.Sandbox{})
	if err != nil {
		return fmt.Errorf("sandbox informer: %w", err)
	}
	if _, err := sandboxes.AddEventHandler(observer(sbr.Observe)); err != nil {
		return err
	}
	claims, err := informers.GetInformer(ctx, &v1alpha1.SandboxClaim{})
	if err != nil {
		return fmt.Errorf("claim informer: %w", err)
	}
	_, err = claims.AddEventHandler(observer(cr.ObserveClaim))
	return err
}

// observer calls seen with each event's object of type T (deleted for a
// delete event, a tombstone's last state included).
func observer[T any](seen func(T, bool)) toolscache.ResourceEventHandlerFuncs {
	call := eachObject(seen)
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { call(o, false) },
		UpdateFunc: func(_, o any) { call(o, false) },
		DeleteFunc: func(o any) { call(o, true) },
	}
}

// eachObject is seen for an informer event's object: a tombstone of a
// delete the informer missed is unwrapped, objects of other types skipped.
func eachObject[T any](seen func(T, bool)) func(o any, deleted bool) {
	return func(o any, deleted bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if obj, ok := o.(T); ok {
			seen(obj, deleted)
		}
	}
}
