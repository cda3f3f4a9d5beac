package sandbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// NameConflictError says a child's name (pod, PVC, Secret or Service) is
// taken by an object this sandbox does not control. The controller never
// adopts, mounts or changes such an object: someone who may create sandboxes
// (or claims, whose cold sandboxes have predictable names) must not be able
// to make it mount another user's PVC or hand out a Secret it did not make.
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

// ensureChild creates obj unless it exists (fill, if set, completes it just
// before the create), and refuses an existing object the sandbox does not
// control. The cache holds only labelled children, so
// an object it does not show may still exist: when a create says so, the
// API server (not the cache) tells whether it is ours and the cache lags, or
// someone else's.
func (r *Reconciler) ensureChild(ctx context.Context, sb *v1alpha1.Sandbox, obj client.Object, fill func() error) error {
	key := client.ObjectKeyFromObject(obj)
	existing := probeFor(obj)
	err := r.Client.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		if fill != nil {
			if err := fill(); err != nil {
				return err
			}
		}
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
	if !isOwnedBy(existing.GetOwnerReferences(), sb) {
		return conflictOf(obj)
	}
	return nil
}

// probeFor is what ensureChild reads an existing child into: a Secret as
// metadata only (the check needs its owners; the agent's keys in it are of
// no use to the controller once made, and at a restart it reads every
// sandbox's Secret once), anything else whole.
func probeFor(obj client.Object) client.Object {
	if _, ok := obj.(*corev1.Secret); ok {
		return secretMeta()
	}
	return obj.DeepCopyObject().(client.Object)
}

func secretMeta() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
}

// reader reads past the cache; tests that build a Reconciler by hand may
// leave APIReader unset and read through the client.
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// seenSecrets remembers the sandboxes whose agent Secret this process saw
// in the API server (by name and UID), so that a pass over a sandbox with a
// running pod needs no Secret read: Secrets are not watched.
type seenSecrets struct{ m sync.Map } // types.NamespacedName -> types.UID

func (s *seenSecrets) has(sb *v1alpha1.Sandbox) bool {
	uid, ok := s.m.Load(client.ObjectKeyFromObject(sb))
	return ok && uid == sb.UID
}

func (s *seenSecrets) add(sb *v1alpha1.Sandbox) { s.m.Store(client.ObjectKeyFromObject(sb), sb.UID) }

func (s *seenSecrets) forget(key types.NamespacedName) { s.m.Delete(key) }

// deleteOrphanSecret deletes the agent Secret of a sandbox that is gone, if
// a sandbox of that name controls it. It reads the Secret by name: the
// controller may not list Secrets.
func (r *Reconciler) deleteOrphanSecret(ctx context.Context, key types.NamespacedName) error {
	sec := secretMeta()
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: v1alpha1.SecretName(key.Name)}, sec)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !ownedBySandboxNamed(sec.OwnerReferences, key.Name) {
		return nil
	}
	err = r.Client.Delete(ctx, sec, client.Preconditions{UID: &sec.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
