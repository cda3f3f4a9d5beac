// Package rywtest helps tests reproduce an informer cache that lags behind
// the writes a process makes.
package rywtest

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lagging is a client whose writes go to Client (the API server) and whose
// reads come from Cache, which does not show those writes: the worst case
// of a cache that has not caught up yet.
type Lagging struct {
	client.Client
	Cache client.Reader
}

// Get reads from the cache.
func (l Lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, o ...client.GetOption) error {
	return l.Cache.Get(ctx, key, obj, o...)
}

// List reads from the cache.
func (l Lagging) List(ctx context.Context, list client.ObjectList, o ...client.ListOption) error {
	return l.Cache.List(ctx, list, o...)
}
