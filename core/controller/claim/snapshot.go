package claim

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// snapshotSource reads the claim's snapshot (spec.snapshotRef) from the
// cache and decides, as the bridge's ClaimSandbox does, whether a sandbox
// can be made from it. A claim without a snapshot passes.
func (r *Reconciler) snapshotSource(ctx context.Context, c *v1alpha1.SandboxClaim) (*lifecycle.SnapshotSourceRefusal, error) {
	name := c.Spec.SnapshotName()
	if name == "" {
		return nil, nil
	}
	snap := &v1alpha1.SandboxSnapshot{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, snap); apierrors.IsNotFound(err) {
		snap = nil
	} else if err != nil {
		return nil, err
	}
	_, no := lifecycle.SnapshotSource(name, snap, c.Spec.TemplateRef.Name)
	return no, nil
}

// snapshotReason is the claim's Ready reason for a refusal of its snapshot:
// the bridge's gRPC reason, in a condition's CamelCase.
func snapshotReason(why lifecycle.SnapshotSourceWhy) string {
	switch why {
	case lifecycle.SnapshotSourceNotFound:
		return v1alpha1.ReasonSnapshotNotFound
	case lifecycle.SnapshotSourceFailed:
		return v1alpha1.ReasonSnapshotNotReady
	case lifecycle.SnapshotSourceNoVolumes:
		return v1alpha1.ReasonSandboxHasNoVolumes
	default:
		return v1alpha1.ReasonTemplateNotFound
	}
}
