package controller

import (
	"context"
	"fmt"

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
	_, err = inf.AddEventHandler(observer(memberSeen(members, written)))
	return err
}

// memberSeen is what watchMembers does with each sandbox an event shows.
func memberSeen(members *adopt.Index, written *readyourwrites.Store[*v1alpha1.Sandbox]) func(*v1alpha1.Sandbox, bool) {
	return func(sb *v1alpha1.Sandbox, deleted bool) {
		members.Update(sb, deleted)
		written.Observe(sb, deleted)
	}
}
