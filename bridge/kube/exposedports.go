package kube

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Port previews on Kubernetes (bridge.ExposureStore): a sandbox's exposed
// ports live on the Sandbox itself, in AnnotationExposedPorts. A restarted
// bridge and every replica of it find a preview from the id in its host
// through an index over the informer cache, so no replica owns a preview
// and the preview Service needs no session affinity. The list goes with
// the object: a delete ends it, a suspend through the bridge clears it in
// the same patch (SuspendSandbox), an idle suspend by the controller too.

var _ bridge.ExposureStore = (*Backend)(nil)

// indexExposureID finds the sandbox whose annotation lists an exposure id.
const indexExposureID = "sandpod.exposureID"

// exposureIDs is the index function of indexExposureID.
func exposureIDs(o client.Object) []string {
	list := v1alpha1.ParseExposedPorts(o.GetAnnotations()[v1alpha1.AnnotationExposedPorts])
	ids := make([]string, 0, len(list))
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	return ids
}

// Exposures returns the ports recorded on a sandbox and its UID.
func (b *Backend) Exposures(ctx context.Context, ns, name string) (string, []v1alpha1.ExposedPort, error) {
	sb, err := b.sandbox(ctx, nsOr(ns), name)
	if err != nil {
		return "", nil, err
	}
	return string(sb.UID), v1alpha1.ParseExposedPorts(sb.Annotations[v1alpha1.AnnotationExposedPorts]), nil
}

// ExposureByID finds an exposure from the cache's index. Anyone who may
// patch a sandbox can write its annotation, even an id another sandbox's
// preview uses: an id listed by two sandboxes is served by neither, never
// by the wrong one.
func (b *Backend) ExposureByID(ctx context.Context, id string) (ns, name, uid string, port v1alpha1.ExposedPort, ok bool) {
	if !v1alpha1.ValidExposureID(id) {
		return "", "", "", port, false
	}
	var list v1alpha1.SandboxList
	if err := b.client.List(ctx, &list, client.MatchingFields{indexExposureID: id}, client.UnsafeDisableDeepCopy); err != nil || len(list.Items) != 1 {
		return "", "", "", port, false
	}
	// Read it again through sandbox(): this process's own newer write (a
	// suspend, which clears the list) wins over a cache that lags.
	sb, err := b.sandbox(ctx, list.Items[0].Namespace, list.Items[0].Name)
	if err != nil {
		return "", "", "", port, false
	}
	for _, p := range v1alpha1.ParseExposedPorts(sb.Annotations[v1alpha1.AnnotationExposedPorts]) {
		if p.ID == id {
			return sb.Namespace, sb.Name, string(sb.UID), p, true
		}
	}
	return "", "", "", port, false
}

// exposeConflictRetries bounds the retries of a write that lost a race
// (another replica's exposure, a controller status write).
const exposeConflictRetries = 5

// UpdateExposures rewrites a sandbox's list with one merge patch that
// carries the resourceVersion it was computed from: a concurrent write
// (another replica exposing another port) makes it conflict, and it is
// computed again from the API server's copy. It returns once this
// process's cache shows the write, so the caller's next call (a list, the
// first request to the URL) sees it.
func (b *Backend) UpdateExposures(ctx context.Context, ns, name string, change func(uid string, cur []v1alpha1.ExposedPort) ([]v1alpha1.ExposedPort, error)) error {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		cur := v1alpha1.ParseExposedPorts(sb.Annotations[v1alpha1.AnnotationExposedPorts])
		next, err := change(string(sb.UID), append([]v1alpha1.ExposedPort(nil), cur...))
		if err != nil {
			return err
		}
		val := v1alpha1.FormatExposedPorts(next)
		if val == sb.Annotations[v1alpha1.AnnotationExposedPorts] {
			return nil // nothing to write
		}
		if len(next) > len(cur) && sb.Spec.OperatingMode == v1alpha1.OperatingModeSuspended {
			return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxSuspended, "sandbox %q is being suspended: its ports cannot be exposed (resume it first)", name)
		}
		var v any // null removes the annotation
		if val != "" {
			v = val
		}
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": sb.ResourceVersion,
			"annotations":     map[string]any{v1alpha1.AnnotationExposedPorts: v},
		}})
		err = b.client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, body))
		if err == nil {
			b.waitCached(ctx, sb)
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == exposeConflictRetries {
			return sandboxError(err, ns, name, "record the exposed ports of sandbox %q", name)
		}
		uid := sb.UID
		sb = &v1alpha1.Sandbox{}
		if err := b.live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
			return sandboxError(err, ns, name, "read sandbox %q", name)
		}
		if sb.UID != uid || sb.DeletionTimestamp != nil {
			return errinfo.SandboxNotFound(ns, name)
		}
	}
}

// waitCached waits (briefly) until the informer cache holds written or a
// later version of it: read-your-writes for a metadata-only patch, which
// recentWrites (by generation) does not cover.
func (b *Backend) waitCached(ctx context.Context, written *v1alpha1.Sandbox) {
	want, err := strconv.ParseUint(written.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ch, stop := b.hub.listen(sandboxKey(written.Namespace, written.Name))
	defer stop()
	for {
		cached := &v1alpha1.Sandbox{}
		err := b.cache.Get(ctx, client.ObjectKeyFromObject(written), cached)
		if err != nil || cached.UID != written.UID {
			return // gone or replaced: nothing to wait for
		}
		if got, err := strconv.ParseUint(cached.ResourceVersion, 10, 64); err != nil || got >= want {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}
