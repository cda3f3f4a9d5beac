package kube

import "sync"

// requestLocks serializes the creates and claims of one request id in this
// process. Without it, concurrent duplicates of a claim each find no sandbox
// for the id (neither the cache nor recentWrites shows the other's take
// yet) and each take a member. Across bridge replicas the cold path is
// still deduplicated by the sandbox's name (objectMeta); a warm take is not.
type requestLocks struct {
	mu sync.Mutex
	m  map[string]*requestLock
}

type requestLock struct {
	sync.Mutex
	users int
}

// lock locks key (nothing for an empty request id) and returns its unlock,
// which may be called more than once (early, and deferred).
func (l *requestLocks) lock(ns, id string) func() {
	if id == "" {
		return func() {}
	}
	key := ns + "/" + id
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*requestLock{}
	}
	e := l.m[key]
	if e == nil {
		e = &requestLock{}
		l.m[key] = e
	}
	e.users++
	l.mu.Unlock()
	e.Lock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.Unlock()
			l.mu.Lock()
			if e.users--; e.users == 0 {
				delete(l.m, key)
			}
			l.mu.Unlock()
		})
	}
}
