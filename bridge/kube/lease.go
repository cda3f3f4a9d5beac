package kube

import (
	"context"
	"encoding/json"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// leaseFor is the lease of a claim or create: the request's, else the
// template's defaultLease (0: none).
func leaseFor(req *durationpb.Duration, tmpl *v1alpha1.SandboxTemplate) time.Duration {
	if req != nil {
		return req.AsDuration()
	}
	if d := tmpl.Spec.Lifecycle.DefaultLease; d != nil {
		return d.Duration
	}
	return 0
}

// handOutAnnotations are written with the claim or create itself (no extra
// write): when it was handed out (claims per minute) and its lease.
func handOutAnnotations(now time.Time, lease time.Duration) map[string]string {
	m := map[string]string{v1alpha1.AnnotationClaimedAt: now.UTC().Format(time.RFC3339Nano)}
	if lease > 0 {
		m[v1alpha1.AnnotationLease] = lease.String()
		m[v1alpha1.AnnotationLeaseExpires] = now.Add(lease).UTC().Format(time.RFC3339Nano)
	}
	return m
}

// leaseOf reads a sandbox's lease from its annotations (ok false: none).
func leaseOf(sb *v1alpha1.Sandbox) (lease time.Duration, expires time.Time, ok bool) {
	lease, err := time.ParseDuration(sb.Annotations[v1alpha1.AnnotationLease])
	if err != nil || lease <= 0 {
		return 0, time.Time{}, false
	}
	expires, err = time.Parse(time.RFC3339Nano, sb.Annotations[v1alpha1.AnnotationLeaseExpires])
	return lease, expires, err == nil
}

// RenewLease moves the lease annotation of a sandbox: one merge patch when
// less than two thirds of the lease is left (lifecycle.RenewLease), else
// nothing, so renewals every lease/4 cost one write per lease/2.
func (b *Backend) RenewLease(ctx context.Context, ns, name string) (time.Time, error) {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return time.Time{}, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallExtend, sb); err != nil {
		return time.Time{}, err
	}
	lease, cur, ok := leaseOf(sb)
	if !ok {
		return time.Time{}, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonNoLease, "sandbox %q has no lease (create or claim it with one, or give its template a defaultLease)", name)
	}
	next, write := lifecycle.RenewLease(b.now(), &cur, lease)
	if !write {
		return next, nil
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationLeaseExpires: next.UTC().Format(time.RFC3339Nano),
	}}})
	target := sb.DeepCopy()
	if err := b.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil {
		return time.Time{}, sandboxError(err, ns, name, "renew the lease of sandbox %q", name)
	}
	b.recent.put(target)
	return next, nil
}

// cachedRequest: a sandbox made by this request id is in the cache (a
// retried create, which the quota must not count twice).
func (b *Backend) cachedRequest(ctx context.Context, ns, id string) bool {
	sb, err := b.byRequestID(ctx, ns, id)
	return err == nil && sb != nil
}
