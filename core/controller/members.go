package controller

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

// watchMembers keeps the claim reconciler's index of free pool members
// (adopt.Index) and its store of its own sandbox writes from the Sandbox
// informer's events, as the bridge does: the index first, so a member this
// process took stays held (the store) until the index no longer offers it.
func watchMembers(ctx context.Context, c cache.Cache, members *adopt.Index, written *readyourwrites.Store[*v1alpha1.Sandbox]) error {
	inf, err := c.GetInformer(ctx, &v1alpha1.Sandbox{})
	if err != nil {
		return fmt.Errorf("sandbox informer: %w", err)
	}
	on := onMemberEvent(members, written)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { on(o, false) },
		UpdateFunc: func(_, o any) { on(o, false) },
		DeleteFunc: func(o any) { on(o, true) },
	})
	return err
}

// onMemberEvent is what watchMembers does with one informer event (a
// tombstone of a delete the informer missed included).
func onMemberEvent(members *adopt.Index, written *readyourwrites.Store[*v1alpha1.Sandbox]) func(o any, deleted bool) {
	return func(o any, deleted bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if sb, ok := o.(*v1alpha1.Sandbox); ok {
			members.Update(sb, deleted)
			written.Observe(sb, deleted)
		}
	}
}
