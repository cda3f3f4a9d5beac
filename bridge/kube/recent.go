package kube

import (
	"sync"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// recentWrites gives the bridge read-your-writes over its informer cache:
// right after a claim takes a member (its env, labels and lifecycle change)
// the caller's first exec may arrive before the watch event does, and must
// see the sandbox as written. An entry lives until the cache has caught up
// with it.
type recentWrites struct {
	mu sync.Mutex
	m  map[string]*v1alpha1.Sandbox
}

func newRecentWrites() *recentWrites { return &recentWrites{m: map[string]*v1alpha1.Sandbox{}} }

func (r *recentWrites) put(sb *v1alpha1.Sandbox) {
	r.mu.Lock()
	r.m[sb.Namespace+"/"+sb.Name] = sb.DeepCopy()
	r.mu.Unlock()
}

// fresher returns what this process wrote to ns/name when the cache has not
// seen it yet: cached is nil (a create not yet seen) or the same sandbox at
// an older generation. Otherwise it returns cached.
func (r *recentWrites) fresher(ns, name string, cached *v1alpha1.Sandbox) *v1alpha1.Sandbox {
	r.mu.Lock()
	w := r.m[ns+"/"+name]
	r.mu.Unlock()
	switch {
	case w == nil:
		return cached
	case cached == nil, cached.UID == w.UID && cached.Generation < w.Generation:
		return w.DeepCopy()
	}
	return cached
}

// seen drops an entry once the cache holds that write (or a later one, or
// another incarnation of the name).
func (r *recentWrites) seen(sb *v1alpha1.Sandbox, deleted bool) {
	key := sb.Namespace + "/" + sb.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.m[key]; w != nil && (deleted || w.UID != sb.UID || sb.Generation >= w.Generation) {
		delete(r.m, key)
	}
}

// byRequestID is what this process wrote for a request id that the cache
// may not show yet: a claim retried right after its first attempt answered
// must find the sandbox that attempt took, not take another.
func (r *recentWrites) byRequestID(ns, id string) *v1alpha1.Sandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.m {
		if w.Namespace == ns && w.Annotations[v1alpha1.AnnotationRequestID] == id && w.DeletionTimestamp == nil {
			return w.DeepCopy()
		}
	}
	return nil
}

// inNamespace is what this process wrote in ns that the cache may not show
// yet (copies).
func (r *recentWrites) inNamespace(ns string) []*v1alpha1.Sandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*v1alpha1.Sandbox
	for _, w := range r.m {
		if w.Namespace == ns {
			out = append(out, w.DeepCopy())
		}
	}
	return out
}
