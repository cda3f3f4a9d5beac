// Package readyourwrites gives a process read-your-writes over an informer
// cache. A controller or the bridge reads objects from its cache and writes
// them to the API server; the watch event that brings its own write into the
// cache comes later. A read in between sees the object as it was before the
// write, and a decision made on it is wrong: the same status written twice, a
// claim adopting a second member, a member taken twice, an exec that does
// not see the env its claim set.
//
// A Store keeps what this process wrote (the API server's answer, which
// carries the write's resourceVersion) until the cache shows that version or
// a later one, and a read merges the two: the write while the cache lags,
// the cache once it has caught up. Entries also lapse after a bound (a lost
// watch event must not pin a stale object), so a Store is small: it holds
// only the writes the cache has not shown yet.
//
// ResourceVersions are compared as the integers etcd-backed API servers
// issue (resourceversion.CompareResourceVersion, KEP-5504). A version that
// does not parse counts as caught up: the store never hides the cache behind
// a write it cannot order.
package readyourwrites

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultTTL bounds how long a write stands in for the cache. An informer
// shows a write within milliseconds to seconds; a minute only matters when
// an event was lost, and then the cache is trusted again.
const DefaultTTL = time.Minute

// Object is a pointer to a Kubernetes object type (e.g. *v1alpha1.Sandbox).
type Object interface {
	client.Object
	comparable
}

// Store holds the objects of one type this process wrote that its cache may
// not show yet, keyed by namespace and name. It is safe for concurrent use;
// the zero Store is empty, with DefaultTTL.
type Store[T Object] struct {
	ttl time.Duration
	now func() time.Time
	// observed: entries go only by Observe (or the ttl), not by a read that
	// finds the cache caught up (NewObserved).
	observed bool

	mu    sync.Mutex
	m     map[types.NamespacedName]entry[T]
	swept time.Time
}

type entry[T Object] struct {
	obj     T
	deleted bool // this process deleted it: reads see it as being deleted
	at      time.Time
}

// New returns an empty store whose entries lapse after ttl (DefaultTTL when
// ttl <= 0).
func New[T Object](ttl time.Duration) *Store[T] {
	return &Store[T]{ttl: ttl}
}

// NewObserved returns an empty store fed by an informer's events: an entry
// goes when Observe is told of the event that shows it, not when a read
// finds the cache caught up. The event reaches the informer's handlers after
// the cache has the object, so a handler that keeps its own view (the
// bridge's index of free pool members) may still show the old object to
// someone who asks Has: the entry must outlive that moment.
func NewObserved[T Object](ttl time.Duration) *Store[T] {
	return &Store[T]{ttl: ttl, observed: true}
}

// Put records obj as this process wrote it: the API server's answer to a
// create, update or patch, so it carries the write's resourceVersion. The
// store keeps obj itself, not a copy: the caller must not change it after.
func (s *Store[T]) Put(obj T) { s.put(obj, false) }

// PutDeleted records that this process deleted obj (as last read). Until the
// cache shows the deletion (a deletionTimestamp, a delete event, another
// object of that name, or none at all), reads see a copy of obj with a
// deletionTimestamp, whatever other changes the cache shows meanwhile.
func (s *Store[T]) PutDeleted(obj T) {
	gone := copyOf(obj)
	if gone.GetDeletionTimestamp() == nil {
		now := metav1.NewTime(s.clock())
		gone.SetDeletionTimestamp(&now)
	}
	s.put(gone, true)
}

func (s *Store[T]) put(obj T, deleted bool) {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.NamespacedName]entry[T]{}
	}
	if now.Sub(s.swept) >= s.lifetime() {
		// Writes the cache never answered for (their objects not read
		// again) lapse here; the sweep runs at most once per ttl.
		for k, e := range s.m {
			if s.lapsed(e, now) {
				delete(s.m, k)
			}
		}
		s.swept = now
	}
	key := keyOf(obj)
	if old, ok := s.m[key]; ok && !deleted && !s.lapsed(old, now) && old.obj.GetUID() == obj.GetUID() &&
		(old.deleted || newer(old.obj, obj)) {
		// Two writes answered out of order, or a write answered after this
		// process deleted the object: the store keeps the latest state.
		return
	}
	s.m[key] = entry[T]{obj: obj, deleted: deleted, at: now}
}

// newer says whether a is a later version of the object than b.
func newer[T Object](a, b T) bool {
	c, err := resourceversion.CompareResourceVersion(a.GetResourceVersion(), b.GetResourceVersion())
	return err == nil && c > 0
}

// Get returns the fresher of cached (the cache's object ns/name, or the zero
// T when the cache has none) and what this process wrote to it: a copy of
// the write while the cache has not caught up with it, else cached. An entry
// the cache has caught up with is dropped (unless NewObserved).
//
// A cache miss counts as a create the cache has not shown yet. A reader
// that may be looking for an object someone else deleted (so the cache
// dropped it and has no event to tell this store) must confirm a miss some
// other way, as the claim reconciler does with a live read.
func (s *Store[T]) Get(ns, name string, cached T) T {
	key := types.NamespacedName{Namespace: ns, Name: name}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return cached
	}
	if s.lapsed(e, now) {
		delete(s.m, key)
		return cached
	}
	if CaughtUp(e.obj, e.deleted, cached) {
		if !s.observed {
			delete(s.m, key)
		}
		return cached
	}
	return copyOf(e.obj)
}

// Observe is told what the cache now holds for obj's name (an informer
// event; deleted for a delete event) and drops the entry it has caught up
// with. A store whose reads all go through Get needs no Observe; one read by
// Has or Pending does, or its entries wait for the ttl.
func (s *Store[T]) Observe(obj T, deleted bool) {
	key := keyOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok && (deleted || CaughtUp(e.obj, e.deleted, obj)) {
		delete(s.m, key)
	}
}

// Has says whether this process wrote ns/name and the cache may not show it
// yet.
func (s *Store[T]) Has(ns, name string) bool {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[types.NamespacedName{Namespace: ns, Name: name}]
	return ok && !s.lapsed(e, now)
}

// Pending returns copies of the objects this process wrote in ns that the
// cache may not show yet and match accepts (match sees the stored object:
// it must only read it). Deletions are included, with their
// deletionTimestamp.
func (s *Store[T]) Pending(ns string, match func(T) bool) []T {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for k, e := range s.m {
		if k.Namespace == ns && !s.lapsed(e, now) && (match == nil || match(e.obj)) {
			out = append(out, copyOf(e.obj))
		}
	}
	return out
}

// Forget drops what was written to ns/name (the object is gone).
func (s *Store[T]) Forget(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, types.NamespacedName{Namespace: ns, Name: name})
}

// Len is the number of entries, lapsed ones included until swept.
func (s *Store[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *Store[T]) lapsed(e entry[T], now time.Time) bool { return now.Sub(e.at) >= s.lifetime() }

func (s *Store[T]) lifetime() time.Duration {
	if s.ttl <= 0 {
		return DefaultTTL
	}
	return s.ttl
}

func (s *Store[T]) clock() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

// CaughtUp says whether cached (the zero T: the cache has no object of that
// name) shows a write: the same object at the write's resourceVersion or a
// later one, or another object of the name. For a deletion (deleted) only
// the deletion itself counts: the cache showing it being deleted, or not
// having it.
func CaughtUp[T Object](written T, deleted bool, cached T) bool {
	var zero T
	switch {
	case cached == zero:
		return deleted // a create not seen yet, or a deletion seen
	case cached.GetUID() != written.GetUID():
		return true // another incarnation of the name
	case deleted:
		return cached.GetDeletionTimestamp() != nil
	}
	c, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), written.GetResourceVersion())
	return err != nil || c >= 0
}

func keyOf(o client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

func copyOf[T Object](o T) T { return o.DeepCopyObject().(T) }
