package index

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Sandboxes are the sandboxes of namespace ns whose field index field
// (Register) holds value, as read-only pointers: the cache's own objects,
// which nobody may change.
//
// A cache List, even with client.UnsafeDisableDeepCopy, copies every
// matching Sandbox struct (1.4 KiB inline, 824 bytes of it the pod
// template's structs) into a new slice: a claim reading its pool of 500
// made 0.7 MiB of garbage, and the bursts of claims (and the pool's passes
// between them) 566 MiB in 50 s, which set the controller's peak RSS. So the informer's index is
// read directly (FromIndex) when informers is the controller-runtime cache,
// and reader's List is the fallback (no cache, or nothing found there: an
// empty answer costs nothing to list, and it keeps the answer right should
// controller-runtime ever key its indexes differently).
func Sandboxes(ctx context.Context, informers cache.Informers, reader client.Reader, ns, field, value string) ([]*v1alpha1.Sandbox, error) {
	if informers != nil {
		if out, ok := FromIndex(ctx, informers, ns, field, value); ok && len(out) > 0 {
			return out, nil
		}
	}
	var list v1alpha1.SandboxList
	if err := reader.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.Sandbox, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// FromIndex reads the sandbox informer's field index directly, as
// controller-runtime's cache names and keys it ("field:" + the field's
// name; "namespace/value"). ok is false when informers holds no such
// informer or index (the caller lists instead): a cache of a few
// namespaces (DefaultNamespaces) wraps its informers and has none.
func FromIndex(ctx context.Context, informers cache.Informers, ns, field, value string) (out []*v1alpha1.Sandbox, ok bool) {
	inf, err := informers.GetInformer(ctx, &v1alpha1.Sandbox{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, false
	}
	withIndexer, isIndexed := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !isIndexed {
		return nil, false
	}
	objs, err := withIndexer.GetIndexer().ByIndex("field:"+field, ns+"/"+value)
	if err != nil {
		return nil, false
	}
	out = make([]*v1alpha1.Sandbox, 0, len(objs))
	for _, o := range objs {
		if sb, isSandbox := o.(*v1alpha1.Sandbox); isSandbox && sb.Namespace == ns {
			out = append(out, sb)
		}
	}
	return out, true
}
