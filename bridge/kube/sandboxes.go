package kube

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// sandbox reads a sandbox from the cache, or what this process last wrote
// to it when the cache has not caught up yet.
func (b *Backend) sandbox(ctx context.Context, ns, name string) (*v1alpha1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{}
	err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
	if apierrors.IsNotFound(err) {
		sb, err = nil, nil
	}
	if err != nil {
		return nil, apiError(err, "read sandbox %q", name)
	}
	// A sandbox being deleted is gone for callers, as in the local engine
	// (watchers see it go TERMINATING, then DELETED).
	if sb = b.recent.fresher(ns, name, sb); sb == nil || sb.DeletionTimestamp != nil {
		return nil, errinfo.SandboxNotFound(ns, name)
	}
	return sb, nil
}

// GetSandbox returns one sandbox.
func (b *Backend) GetSandbox(ctx context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	sb, err := b.sandbox(ctx, nsOr(ns), name)
	if err != nil {
		return nil, err
	}
	return sandboxToProto(sb, b.clusterDomain), nil
}

// ListSandboxes returns the matching sandboxes of a namespace, by name.
func (b *Backend) ListSandboxes(ctx context.Context, ns string, sel labels.Selector, includePool bool) ([]*sandpodv1.Sandbox, error) {
	ns = nsOr(ns)
	var list v1alpha1.SandboxList
	// The whole namespace, then the selector: this process's own writes the
	// cache does not show yet (a claim's new labels, a create) count as
	// written (read-your-writes, as for Get).
	if err := b.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, apiError(err, "list sandboxes")
	}
	out := make([]*sandpodv1.Sandbox, 0, len(list.Items))
	keep := func(sb *v1alpha1.Sandbox) {
		if sb != nil && sb.DeletionTimestamp == nil && (includePool || !isPoolMember(sb)) && sel.Matches(labels.Set(sb.Labels)) {
			out = append(out, sandboxToProto(sb, b.clusterDomain))
		}
	}
	cached := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		cached[list.Items[i].Name] = true
		keep(b.recent.fresher(ns, list.Items[i].Name, &list.Items[i]))
	}
	for _, sb := range b.recent.inNamespace(ns) {
		if !cached[sb.Name] {
			keep(sb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// WatchSandboxes streams the cache's sandbox events until ctx ends.
func (b *Backend) WatchSandboxes(ctx context.Context, ns string, sel labels.Selector, includePool, sendInitial bool) (<-chan *sandpodv1.WatchSandboxesResponse, error) {
	s := &subscriber{namespace: nsOr(ns), selector: sel, includePool: includePool, ch: make(chan *sandpodv1.WatchSandboxesResponse, watchBuffer)}
	// Subscribe before listing: an object changing in between is sent twice
	// (initial, then modified), never missed.
	cancel := b.hub.subscribe(s)
	if sendInitial {
		initial, err := b.ListSandboxes(ctx, ns, sel, includePool)
		if err != nil {
			cancel()
			return nil, err
		}
		if len(initial) > watchBuffer/2 {
			cancel()
			return nil, errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonTooManyInitialEvents, "send_initial_events: %d sandboxes match; narrow label_selector (or list, then watch without initial events)", len(initial))
		}
		for _, sb := range initial {
			s.ch <- &sandpodv1.WatchSandboxesResponse{Type: sandpodv1.WatchSandboxesResponse_EVENT_TYPE_ADDED, Sandbox: sb}
		}
	}
	go func() {
		<-ctx.Done()
		cancel()
	}()
	return s.ch, nil
}

// SuspendSandbox sets the sandbox's operating mode to Suspended: the
// controller deletes its pod and keeps its storage and identity.
func (b *Backend) SuspendSandbox(ctx context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallSuspend, sb); err != nil {
		return nil, err
	}
	if phaseOf(sb) == v1alpha1.SandboxExpired {
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxExpired, "sandbox %q has expired; it is already stopped", name)
	}
	// The port previews close in the same write (exposedports.go).
	if err := b.patchSpec(ctx, sb, map[string]any{"operatingMode": v1alpha1.OperatingModeSuspended}, v1alpha1.AnnotationExposedPorts); err != nil {
		return nil, sandboxError(err, ns, name, "suspend sandbox %q", name)
	}
	return sandboxToProto(sb, b.clusterDomain), nil
}

// ResumeSandbox sets the operating mode back to Running (a new pod with the
// same name and storage) and, when asked, waits for it to be ready; a paused
// sandbox is thawed in its pod (pause.go).
func (b *Backend) ResumeSandbox(ctx context.Context, ns, name string, wait bool) (*sandpodv1.Sandbox, error) {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallResume, sb); err != nil {
		return nil, err
	}
	if phaseOf(sb) == v1alpha1.SandboxExpired {
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxExpired, "sandbox %q has expired; extend its shutdown time first", name)
	}
	if sb.Spec.OperatingMode == v1alpha1.OperatingModePaused {
		return b.resumePaused(ctx, sb)
	}
	if sb.Spec.OperatingMode == v1alpha1.OperatingModeSuspended {
		if err := b.patchSpec(ctx, sb, map[string]any{"operatingMode": v1alpha1.OperatingModeRunning}); err != nil {
			return nil, sandboxError(err, ns, name, "resume sandbox %q", name)
		}
	}
	if !wait {
		return sandboxToProto(sb, b.clusterDomain), nil
	}
	return b.waitRunning(ctx, ns, name, sb.UID)
}

// ExtendSandbox moves the shutdown time. An expired (retained) sandbox comes
// back suspended, ready to resume, as in the local engine.
func (b *Backend) ExtendSandbox(ctx context.Context, ns, name string, shutdown time.Time) (*sandpodv1.Sandbox, error) {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallExtend, sb); err != nil {
		return nil, err
	}
	spec := map[string]any{"lifecycle": map[string]any{"shutdownTime": metav1.NewTime(shutdown)}}
	var drop []string
	if phaseOf(sb) == v1alpha1.SandboxExpired {
		spec["operatingMode"] = v1alpha1.OperatingModeSuspended
		// An expired lease goes too (lease.go), or it would expire again.
		drop = []string{v1alpha1.AnnotationLease, v1alpha1.AnnotationLeaseExpires}
	}
	if err := b.patchSpec(ctx, sb, spec, drop...); err != nil {
		return nil, sandboxError(err, ns, name, "extend sandbox %q", name)
	}
	return sandboxToProto(sb, b.clusterDomain), nil
}

// DeleteSandbox deletes a sandbox, and the claim holding it (which would
// otherwise stay behind reporting its sandbox gone).
func (b *Backend) DeleteSandbox(ctx context.Context, ns, name string) error {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return err
	}
	if sb, err = b.reach(ctx, lifecycle.CallDelete, sb); err != nil {
		return err
	}
	background := client.PropagationPolicy(metav1.DeletePropagationBackground)
	if ref := metav1.GetControllerOf(sb); ref != nil && ref.Kind == "SandboxClaim" {
		c := &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ref.Name}}
		uid := ref.UID
		if err := b.client.Delete(ctx, c, client.Preconditions{UID: &uid}, background); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return apiError(err, "delete claim %q of sandbox %q", ref.Name, name)
		}
	}
	if err := b.client.Delete(ctx, sb, client.Preconditions{UID: &sb.UID}, background); err != nil && !apierrors.IsNotFound(err) {
		return apiError(err, "delete sandbox %q", name)
	}
	// Until the cache sees the deletion, calls must already find it gone.
	gone := sb.DeepCopy()
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	b.recent.put(gone)
	return nil
}

// patchSpec merge-patches fields of sb's spec and leaves the result in sb.
// The fields it sets (mode, shutdown time) are the caller's intent whatever
// else changed meanwhile, so the patch carries no resourceVersion: a status
// write by the controller must not make a suspend fail. The annotations
// named in drop are removed in the same patch.
func (b *Backend) patchSpec(ctx context.Context, sb *v1alpha1.Sandbox, spec map[string]any, drop ...string) error {
	patch := map[string]any{"spec": spec}
	gone := map[string]any{}
	for _, k := range drop {
		gone[k] = nil // even when the cached sb lacks it: another replica may have just set it
	}
	if len(gone) > 0 {
		patch["metadata"] = map[string]any{"annotations": gone}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := b.client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, body)); err != nil {
		return err
	}
	b.recent.put(sb)
	return nil
}
