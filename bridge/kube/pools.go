package kube

import (
	"context"
	"encoding/json"
	"sort"

	"google.golang.org/grpc/codes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// ListTemplates returns a namespace's templates, by name.
func (b *Backend) ListTemplates(ctx context.Context, ns string) ([]*sandpodv1.Template, error) {
	var list v1alpha1.SandboxTemplateList
	if err := b.client.List(ctx, &list, client.InNamespace(nsOr(ns))); err != nil {
		return nil, apiError(err, "list templates")
	}
	out := make([]*sandpodv1.Template, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, templateToProto(&list.Items[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ListWarmPools returns a namespace's warm pools, by name.
func (b *Backend) ListWarmPools(ctx context.Context, ns string) ([]*sandpodv1.WarmPool, error) {
	var list v1alpha1.SandboxWarmPoolList
	if err := b.client.List(ctx, &list, client.InNamespace(nsOr(ns))); err != nil {
		return nil, apiError(err, "list warm pools")
	}
	out := make([]*sandpodv1.WarmPool, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, poolToProto(&list.Items[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (b *Backend) pool(ctx context.Context, ns, name string) (*v1alpha1.SandboxWarmPool, error) {
	p := &v1alpha1.SandboxWarmPool{}
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errinfo.Newf(codes.NotFound, errinfo.ReasonPoolNotFound, "warm pool %q not found in namespace %q", name, ns)
		}
		return nil, apiError(err, "read warm pool %q", name)
	}
	return p, nil
}

// GetWarmPool returns one pool with its ready and pending counts.
func (b *Backend) GetWarmPool(ctx context.Context, ns, name string) (*sandpodv1.WarmPool, error) {
	p, err := b.pool(ctx, nsOr(ns), name)
	if err != nil {
		return nil, err
	}
	return poolToProto(p), nil
}

// ScaleWarmPool sets a pool's size; the API server checks its bounds.
func (b *Backend) ScaleWarmPool(ctx context.Context, ns, name string, replicas int32) (*sandpodv1.WarmPool, error) {
	p, err := b.pool(ctx, nsOr(ns), name)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
	if err := b.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, body)); err != nil {
		return nil, apiError(err, "scale warm pool %q", name)
	}
	return poolToProto(p), nil
}
