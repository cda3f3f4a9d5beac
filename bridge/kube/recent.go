package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

// recentWrites gives the bridge read-your-writes over its informer cache
// (a readyourwrites.Store fed by the sandbox informer's events): right after
// a claim takes a member (its env, labels and lifecycle change) the caller's
// first exec may arrive before the watch event does, and must see the
// sandbox as written; a retried claim must find what its first attempt
// took; a deleted sandbox is gone at once. The warm take's reservations
// (adopt.Taken) record their takes in the same store, so a member stays
// skipped exactly until the cache shows it taken.
type recentWrites struct {
	store *readyourwrites.Store[*v1alpha1.Sandbox]
}

func newRecentWrites() *recentWrites {
	return &recentWrites{store: readyourwrites.NewObserved[*v1alpha1.Sandbox](0)}
}

// put records what this process wrote to a sandbox (the API server's
// answer, carrying the write's resourceVersion), or, with a
// deletionTimestamp, that it deleted it.
func (r *recentWrites) put(sb *v1alpha1.Sandbox) {
	if sb.DeletionTimestamp != nil {
		r.store.PutDeleted(sb)
		return
	}
	r.store.Put(slimCopy(sb).DeepCopy())
}

// slimCopy is sb as the cache keeps it (core/lowmem/slim.go), sharing the rest with
// sb: the pod template is not copied. adopt.Taken keeps its takes so
// (Taken.Keep), and the caller only reads the answer after.
func slimCopy(sb *v1alpha1.Sandbox) *v1alpha1.Sandbox {
	c := *sb
	c.Spec.PodTemplate, c.ManagedFields = corev1.PodTemplateSpec{}, nil
	return &c
}

// fresher returns what this process wrote to ns/name when the cache has not
// seen it yet: cached is nil (a create not yet seen) or the same sandbox at
// an older resourceVersion. Otherwise it returns cached.
func (r *recentWrites) fresher(ns, name string, cached *v1alpha1.Sandbox) *v1alpha1.Sandbox {
	return r.store.Get(ns, name, cached)
}

// seen drops an entry once the cache holds that write (or a later one, or
// another incarnation of the name, or its deletion).
func (r *recentWrites) seen(sb *v1alpha1.Sandbox, deleted bool) { r.store.Observe(sb, deleted) }

// byRequestID is what this process wrote for a request id that the cache
// may not show yet: a claim retried right after its first attempt answered
// must find the sandbox that attempt took, not take another.
func (r *recentWrites) byRequestID(ns, id string) *v1alpha1.Sandbox {
	found := r.store.Pending(ns, func(w *v1alpha1.Sandbox) bool {
		return w.Annotations[v1alpha1.AnnotationRequestID] == id && w.DeletionTimestamp == nil
	})
	if len(found) == 0 {
		return nil
	}
	return found[0]
}

// inNamespace is what this process wrote in ns that the cache may not show
// yet (copies; deletions with their deletionTimestamp).
func (r *recentWrites) inNamespace(ns string) []*v1alpha1.Sandbox { return r.store.Pending(ns, nil) }
