package sandbox

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// writtenStatuses remembers the last status this process wrote to each
// sandbox, with the resourceVersion it was written over. A pass woken by a
// child (the pod or secret it just made) often runs before the informer has
// delivered that status write; without this it would compute the same status
// against the old one and send it again, a write that changes nothing (the
// kwok bench counted half a status patch per warm claim of those).
type writtenStatuses struct {
	mu sync.Mutex
	m  map[types.NamespacedName]writtenStatus
}

type writtenStatus struct {
	uid    types.UID
	baseRV string // the sandbox's resourceVersion the write was made over
	status v1alpha1.SandboxStatus
}

// record notes that st was written over sandbox key (uid) at baseRV.
func (w *writtenStatuses) record(key types.NamespacedName, uid types.UID, baseRV string, st v1alpha1.SandboxStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]writtenStatus{}
	}
	w.m[key] = writtenStatus{uid: uid, baseRV: baseRV, status: st}
}

// catchUp gives sb the status this process last wrote when the cache still
// shows the object that write was made over, and forgets the write once the
// cache has moved past it.
func (w *writtenStatuses) catchUp(sb *v1alpha1.Sandbox) {
	key := types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.m[key]
	if !ok {
		return
	}
	if staleView(m, sb) {
		sb.Status = *m.status.DeepCopy()
		return
	}
	delete(w.m, key)
}

// forget drops what is remembered of a sandbox that is gone.
func (w *writtenStatuses) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// staleView says whether the cached sb is still the object a remembered
// write was made over: the same sandbox at the same resourceVersion (any
// write since, ours included, changes it).
func staleView(m writtenStatus, sb *v1alpha1.Sandbox) bool {
	return m.uid == sb.UID && m.baseRV == sb.ResourceVersion
}
