package adopt

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

// takenHold bounds a reservation whose write never answered (a caller that
// reserved and did not release).
const takenHold = 30 * time.Second

// Taken is the set of pool members this process is taking or has just
// taken. Claims served concurrently from one informer cache would otherwise
// all try the same first candidate, and every claim after the first would
// pay a refused write per member its cache still shows as free.
//
// It has two parts. A member being taken (reserved, its write not answered
// yet) is a lock between the claims of this process, not a cache: it is held
// until the write answers. A member taken is a write the cache does not show
// yet, and is held in the process's read-your-writes store of sandboxes
// (readyourwrites.Store) until the cache shows it taken.
type Taken struct {
	mu      sync.Mutex
	set     map[types.NamespacedName]time.Time // when reserved
	now     func() time.Time
	written *readyourwrites.Store[*v1alpha1.Sandbox]
	// Keep, if set, is what the store keeps of a take's answer (Took): a
	// process whose cache keeps sandboxes slim keeps its takes slim too
	// (the bridge: without the pod template), or they would hold the
	// whole answer until the cache shows the take.
	Keep func(*v1alpha1.Sandbox) *v1alpha1.Sandbox
}

// NewTaken returns an empty set whose takes are recorded in written (shared
// with the process's other reads of sandboxes; nil: a store of its own).
func NewTaken(written *readyourwrites.Store[*v1alpha1.Sandbox]) *Taken {
	if written == nil {
		written = readyourwrites.New[*v1alpha1.Sandbox](0)
	}
	return &Taken{set: map[types.NamespacedName]time.Time{}, now: time.Now, written: written}
}

// Reserve claims ns/name for the caller; false when another caller of this
// process has it, or has taken it and the cache does not show that yet.
func (t *Taken) Reserve(ns, name string) bool {
	if t.written.Has(ns, name) {
		return false
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if at, ok := t.set[key]; ok && now.Sub(at) < takenHold {
		return false
	}
	if len(t.set) > 4096 {
		for k, at := range t.set {
			if now.Sub(at) >= takenHold {
				delete(t.set, k)
			}
		}
	}
	t.set[key] = now
	return true
}

// Held says whether a caller of this process has ns/name reserved or has
// just taken it: a cheap look before Reserve, so a claim choosing among
// many members passes over the ones other claims hold without reserving
// each.
func (t *Taken) Held(ns, name string) bool {
	if t.written.Has(ns, name) {
		return true
	}
	now := t.now()
	t.mu.Lock()
	at, ok := t.set[types.NamespacedName{Namespace: ns, Name: name}]
	t.mu.Unlock()
	return ok && now.Sub(at) < takenHold
}

// Release gives ns/name back (the write failed: someone else has it, or it
// is gone, and the cache will say so).
func (t *Taken) Release(ns, name string) {
	t.mu.Lock()
	delete(t.set, types.NamespacedName{Namespace: ns, Name: name})
	t.mu.Unlock()
}

// Written is the store the takes are recorded in.
func (t *Taken) Written() *readyourwrites.Store[*v1alpha1.Sandbox] { return t.written }

// Took records the answer to a take's write (the store keeps sb: the caller
// only reads it after) and ends its reservation: the member stays held until
// the cache shows it taken.
func (t *Taken) Took(sb *v1alpha1.Sandbox) {
	if t.Keep != nil {
		t.written.Put(t.Keep(sb))
	} else {
		t.written.Put(sb)
	}
	t.Release(sb.Namespace, sb.Name)
}
