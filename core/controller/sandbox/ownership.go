package sandbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// NameConflictError says a child's name (pod, PVC or Service) is
// taken by an object this sandbox does not control. The controller never
// adopts, mounts or changes such an object: someone who may create sandboxes
// (or claims, whose cold sandboxes have predictable names) must not be able
// to make it mount another user's PVC.
type NameConflictError struct {
	Kind, Name string
}

func (e *NameConflictError) Error() string {
	return fmt.Sprintf("%s %q already exists and is not owned by this sandbox; the controller leaves it alone: delete or rename it, or give the sandbox another name", e.Kind, e.Name)
}

// IsNameConflict reports whether err is (or wraps) a NameConflictError.
func IsNameConflict(err error) bool {
	var c *NameConflictError
	return errors.As(err, &c)
}

func conflictOf(obj client.Object) *NameConflictError {
	return &NameConflictError{Kind: reflect.TypeOf(obj).Elem().Name(), Name: obj.GetName()}
}

// ensureChild creates obj unless it exists, and refuses an existing object the sandbox does not
// control. The cache holds only labelled children, so
// an object it does not show may still exist: when a create says so, the
// API server (not the cache) tells whether it is ours and the cache lags, or
// someone else's.
func (r *Reconciler) ensureChild(ctx context.Context, sb *v1alpha1.Sandbox, obj client.Object) error {
	key := client.ObjectKeyFromObject(obj)
	existing := obj.DeepCopyObject().(client.Object)
	err := r.Client.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		err = r.Client.Create(ctx, obj)
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", conflictOf(obj).Kind, obj.GetName(), err)
		}
		err = r.reader().Get(ctx, key, existing)
	}
	if err != nil {
		return err
	}
	if isEarlierIncarnation(existing.GetOwnerReferences(), sb) {
		if err := r.deleteEarlier(ctx, existing); err != nil {
			return err
		}
		return fmt.Errorf("%s %s of an earlier sandbox named %q is going away", conflictOf(obj).Kind, obj.GetName(), sb.Name)
	}
	if !isOwnedBy(existing.GetOwnerReferences(), sb) {
		return conflictOf(obj)
	}
	return nil
}

// isEarlierIncarnation says whether a child is controlled by a sandbox of
// this name with another UID: one deleted since (names are unique), whose
// children the garbage collector removes in the background. A sandbox
// made again under the name meanwhile (a request id reused right after a
// delete names it alike) must not be failed with a name conflict for them.
func isEarlierIncarnation(refs []metav1.OwnerReference, sb *v1alpha1.Sandbox) bool {
	return ownedBySandboxNamed(refs, sb.Name) && !isOwnedBy(refs, sb)
}

// deleteEarlier deletes a child of an earlier incarnation, as the garbage
// collector would (it may not run yet, or at all on a bare API server).
func (r *Reconciler) deleteEarlier(ctx context.Context, obj client.Object) error {
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := obj.GetUID()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// reader reads past the cache; tests that build a Reconciler by hand may
// leave APIReader unset and read through the client.
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
