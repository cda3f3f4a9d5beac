// Package fieldindex holds the cache field indexes that both the controller
// and the bridge's Kubernetes backend read by (one name and one extractor
// each), and the reads over them, so the two cannot drift apart. Indexes
// only one side reads stay with it (core/controller/index, bridge/kube).
package fieldindex

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// SandboxSnapshot indexes sandboxes by the SandboxSnapshot they are made
// from (spec.snapshotRef.name): a snapshot's users.
const SandboxSnapshot = "sandpod.index.snapshot"

// SnapshotOfSandbox is the SandboxSnapshot a sandbox is made from, if any
// (the extractor of SandboxSnapshot).
func SnapshotOfSandbox(o client.Object) []string {
	if ref := o.(*v1alpha1.Sandbox).Spec.SnapshotRef; ref != nil {
		return []string{ref.Name}
	}
	return nil
}

// SnapshotUsers are the sandboxes made from snapshot ns/name and the pools
// naming it (lifecycle.SnapshotUsers), read through c: a cache with the
// SandboxSnapshot index.
func SnapshotUsers(ctx context.Context, c client.Reader, ns, name string) ([]string, error) {
	var sbs v1alpha1.SandboxList
	if err := c.List(ctx, &sbs, client.InNamespace(ns), client.MatchingFields{SandboxSnapshot: name}); err != nil {
		return nil, fmt.Errorf("list the sandboxes of snapshot %s/%s: %w", ns, name, err)
	}
	var pools v1alpha1.SandboxWarmPoolList
	if err := c.List(ctx, &pools, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list the warm pools of namespace %s: %w", ns, err)
	}
	sp := make([]*v1alpha1.Sandbox, len(sbs.Items))
	for i := range sbs.Items {
		sp[i] = &sbs.Items[i]
	}
	pp := make([]*v1alpha1.SandboxWarmPool, len(pools.Items))
	for i := range pools.Items {
		pp[i] = &pools.Items[i]
	}
	return lifecycle.SnapshotUsers(name, sp, pp), nil
}
