package adopt

import (
	"sync"
	"time"
)

// takenHold is how long a member this process took (or is taking) is
// skipped: long enough for the informer cache to show it claimed.
const takenHold = 30 * time.Second

// Taken is the set of pool members this process is taking or has just
// taken. Claims served concurrently from one informer cache would otherwise
// all try the same first candidate, and every claim after the first would
// pay a refused write per member its cache still shows as free.
type Taken struct {
	mu  sync.Mutex
	set map[string]time.Time // namespace/name -> when reserved
	now func() time.Time
}

// NewTaken returns an empty set.
func NewTaken() *Taken { return &Taken{set: map[string]time.Time{}, now: time.Now} }

// Reserve claims ns/name for the caller; false when another caller of this
// process has it.
func (t *Taken) Reserve(ns, name string) bool {
	key := ns + "/" + name
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

// Held says whether a caller of this process has ns/name reserved: a cheap
// look before Reserve, so a claim choosing among many members passes over
// the ones other claims hold without reserving each.
func (t *Taken) Held(ns, name string) bool {
	now := t.now()
	t.mu.Lock()
	at, ok := t.set[ns+"/"+name]
	t.mu.Unlock()
	return ok && now.Sub(at) < takenHold
}

// Release gives ns/name back (the write failed: someone else has it, or it
// is gone, and the cache will say so).
func (t *Taken) Release(ns, name string) {
	t.mu.Lock()
	delete(t.set, ns+"/"+name)
	t.mu.Unlock()
}
