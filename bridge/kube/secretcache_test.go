package kube

import "testing"

// Without --legacy-agent-secrets (the default) the bridge has no Secret
// cache, and every sandbox delete event still tells it to forget one: a
// nil cache must take that (it panicked the informer's handler, and the
// bridge with it, on the first deleted sandbox).
func TestNilSecretCacheForgets(t *testing.T) {
	var s *secretCache
	s.forget("uid")
	if c := newSecretCache(); c != nil {
		c.forget("uid")
	}
}
