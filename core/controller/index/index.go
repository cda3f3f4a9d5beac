// Package index holds the field indexes the reconcilers read the cache by,
// so the claim hot path never lists a whole namespace.
package index

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/fieldindex"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

const (
	// SandboxPool indexes unclaimed sandboxes by their pool label.
	SandboxPool = "sandpod.index.pool"
	// SandboxClaim indexes sandboxes by the claim holding them.
	SandboxClaim = "sandpod.index.claim"
	// PoolTemplate indexes warm pools by template name.
	PoolTemplate = "sandpod.index.template"
	// SandboxSnapshot indexes sandboxes by the SandboxSnapshot they are
	// made from: a snapshot's users. The bridge reads it too, so it is
	// defined in core/api/fieldindex.
	SandboxSnapshot = fieldindex.SandboxSnapshot
	// ClaimSnapshot indexes SandboxClaims by the SandboxSnapshot they
	// claim from (spec.snapshotRef.name): the claims a snapshot wakes.
	ClaimSnapshot = "sandpod.index.claimsnapshot"
)

// Indexer is the part of a manager that registers field indexes.
type Indexer interface {
	IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error
}

// Register adds every index.
func Register(ctx context.Context, ix Indexer) error {
	if err := ix.IndexField(ctx, &v1alpha1.Sandbox{}, SandboxPool, func(o client.Object) []string {
		if p, ok := o.GetLabels()[v1alpha1.LabelPool]; ok {
			return []string{p}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := ix.IndexField(ctx, &v1alpha1.Sandbox{}, SandboxClaim, func(o client.Object) []string {
		if c, ok := o.GetLabels()[v1alpha1.LabelClaim]; ok {
			return []string{c}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := ix.IndexField(ctx, &v1alpha1.Sandbox{}, SandboxSnapshot, fieldindex.SnapshotOfSandbox); err != nil {
		return err
	}
	if err := ix.IndexField(ctx, &v1alpha1.SandboxClaim{}, ClaimSnapshot, func(o client.Object) []string {
		if n := o.(*v1alpha1.SandboxClaim).Spec.SnapshotName(); n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return err
	}
	return ix.IndexField(ctx, &v1alpha1.SandboxWarmPool{}, PoolTemplate, func(o client.Object) []string {
		return []string{o.(*v1alpha1.SandboxWarmPool).Spec.TemplateRef.Name}
	})
}
