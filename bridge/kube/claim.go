package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// ClaimSandbox takes a ready warm pool member of the template in one API
// write (a patch guarded by the member's resourceVersion, so two claims never
// get the same member), or creates a sandbox cold when none is ready. The
// controller's SandboxClaim path (two more writes and two more watch hops)
// serves kubectl users; the bridge does the same adoption itself.
//
// With a request id, a retry returns what the first attempt got: an adopted
// member carries the id (found through the cache's index), a cold sandbox is
// named after it.
func (b *Backend) ClaimSandbox(ctx context.Context, req *sandpodv1.ClaimSandboxRequest) (*sandpodv1.Sandbox, bool, error) {
	ns := nsOr(req.GetNamespace())
	snap, tmplName, err := b.fromSnapshot(ctx, ns, req.GetSnapshot(), req.GetTemplate())
	if err != nil {
		return nil, false, err
	}
	tmpl, err := b.template(ctx, ns, tmplName)
	if err != nil {
		return nil, false, err
	}
	if id := req.GetRequestId(); id != "" {
		if sb, err := b.byRequestID(ctx, ns, id); err != nil || sb != nil {
			if err != nil {
				return nil, false, err
			}
			return b.claimed(ctx, sb)
		}
	}
	now := b.now()
	holder := adopt.Holder{
		Labels:    req.GetLabels(),
		Env:       envVars(req.GetEnv()),
		Lifecycle: lifecycle.ClaimLifecycle(now, requestLifecycle(now, req.GetTtl(), req.GetShutdownTime(), req.GetShutdownPolicy()), tmpl.Spec.Lifecycle),
		RequestID: req.GetRequestId(),
		// RestartOnFailure: the request's, else the template's default.
		RestartOnFailure: lifecycle.RestartOnFailure(req.RestartOnFailure, tmpl.Spec.RestartOnFailure),
	}
	sb, err := b.adopt(ctx, tmpl, snap, holder)
	if err != nil {
		return nil, false, err
	}
	if sb != nil {
		return sandboxToProto(sb), true, nil
	}
	got, err := b.createFromTemplate(ctx, tmpl, snap, "", req.GetRequestId(), req.GetLabels(), holder.Env, holder.Lifecycle, false, holder.RestartOnFailure)
	return got, false, err
}

// claimed is the answer to a retried claim: the sandbox its first attempt got.
func (b *Backend) claimed(ctx context.Context, sb *v1alpha1.Sandbox) (*sandpodv1.Sandbox, bool, error) {
	_, warm := sb.Annotations[v1alpha1.AnnotationFromPool]
	got, err := b.waitRunning(ctx, sb.Namespace, sb.Name, sb.UID)
	return got, warm, err
}

// byRequestID finds the sandbox a request id already produced, if any.
func (b *Backend) byRequestID(ctx context.Context, ns, id string) (*v1alpha1.Sandbox, error) {
	var list v1alpha1.SandboxList
	if err := b.client.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{indexRequestID: id}); err != nil {
		return nil, apiError(err, "look up request id %q", id)
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			return &list.Items[i], nil
		}
	}
	return b.recent.byRequestID(ns, id), nil
}

// adopt takes the best ready member of the template's pools (adopt.Adoption),
// or returns nil when none is ready. Members come from the index the
// informer's events keep (memberIndex), not from a list of the cache per
// claim. Members this process is taking or has just taken are skipped
// (adopt.Taken), so concurrent claims spread over the pool instead of
// colliding on its first member while the cache catches up.
func (b *Backend) adopt(ctx context.Context, tmpl *v1alpha1.SandboxTemplate, snapshot string, h adopt.Holder) (*v1alpha1.Sandbox, error) {
	ns, hash := tmpl.Namespace, lifecycle.PoolHash(lifecycle.TemplateHash(tmpl.Spec), snapshot)
	sb, name, err := adopt.Adoption{
		Writer: b.client,
		Taken:  b.taken,
		Next: func(skip func(string) bool) (*v1alpha1.Sandbox, bool) {
			return b.members.pick(ns, tmpl.Name, snapshot, hash, skip)
		},
		Apply: func(sb *v1alpha1.Sandbox) { adopt.Take(sb, h) },
	}.Run(ctx, ns)
	if err != nil {
		return nil, apiError(err, "take warm sandbox %q", name)
	}
	if sb != nil {
		b.recent.put(sb)
	}
	return sb, nil
}

// CreateSandbox creates a Sandbox from a template (cold: warm pools serve
// claims) and waits for it to be ready unless asked not to.
func (b *Backend) CreateSandbox(ctx context.Context, req *sandpodv1.CreateSandboxRequest) (*sandpodv1.Sandbox, error) {
	ns := nsOr(req.GetNamespace())
	snap, tmplName, err := b.fromSnapshot(ctx, ns, req.GetSnapshot(), req.GetTemplate())
	if err != nil {
		return nil, err
	}
	tmpl, err := b.template(ctx, ns, tmplName)
	if err != nil {
		return nil, err
	}
	now := b.now()
	l := lifecycle.ClaimLifecycle(now, requestLifecycle(now, req.GetTtl(), req.GetShutdownTime(), req.GetShutdownPolicy()), tmpl.Spec.Lifecycle)
	restart := lifecycle.RestartOnFailure(req.RestartOnFailure, tmpl.Spec.RestartOnFailure)
	return b.createFromTemplate(ctx, tmpl, snap, req.GetName(), req.GetRequestId(), req.GetLabels(), envVars(req.GetEnv()), l, req.GetNoWait(), restart)
}

// createFromTemplate creates a sandbox of tmpl (with its volumes from
// snapshot, if set), named name, else after the request id, else generated;
// a retry of the same request id finds the sandbox of its first attempt.
func (b *Backend) createFromTemplate(ctx context.Context, tmpl *v1alpha1.SandboxTemplate, snapshot, name, requestID string,
	labels map[string]string, env []corev1.EnvVar, l v1alpha1.Lifecycle, noWait, restartOnFailure bool) (*sandpodv1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{
		ObjectMeta: objectMeta(tmpl.Namespace, tmpl.Name, requestID),
		Spec:       lifecycle.SandboxSpecFromTemplate(tmpl.Name, &tmpl.Spec),
	}
	if name != "" {
		sb.Name, sb.GenerateName = name, ""
	}
	sb.Labels = map[string]string{v1alpha1.LabelTemplate: tmpl.Name}
	for k, v := range labels {
		sb.Labels[k] = v
	}
	sb.Spec.Env = env
	sb.Spec.Lifecycle = l
	sb.Spec.RestartOnFailure = restartOnFailure
	if snapshot != "" {
		sb.Spec.SnapshotRef = &v1alpha1.SnapshotRef{Name: snapshot}
		sb.Labels[v1alpha1.LabelSnapshot] = snapshot
	}

	err := b.client.Create(ctx, sb)
	if apierrors.IsAlreadyExists(err) && requestID != "" {
		existing := &v1alpha1.Sandbox{}
		if gerr := b.live.Get(ctx, client.ObjectKeyFromObject(sb), existing); gerr == nil &&
			existing.Annotations[v1alpha1.AnnotationRequestID] == requestID {
			sb, err = existing, nil // a retry of the request that created it
		}
	}
	if apierrors.IsAlreadyExists(err) {
		return nil, errinfo.Newf(codes.AlreadyExists, errinfo.ReasonSandboxExists, "sandbox %q already exists in namespace %q", sb.Name, sb.Namespace)
	}
	if err != nil {
		return nil, apiError(err, "create a %q sandbox", tmpl.Name)
	}
	b.recent.put(sb)
	if noWait {
		return sandboxToProto(sb), nil
	}
	return b.waitRunning(ctx, sb.Namespace, sb.Name, sb.UID)
}

// waitRunning waits for a sandbox to be ready (or to fail).
func (b *Backend) waitRunning(ctx context.Context, ns, name string, uid types.UID) (*sandpodv1.Sandbox, error) {
	ctx, cancel := answerBeforeDeadline(ctx)
	defer cancel()
	woken, stop := b.hub.listen(sandboxKey(ns, name))
	defer stop()
	var last string
	for {
		sb := &v1alpha1.Sandbox{}
		err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
		switch {
		case apierrors.IsNotFound(err):
			// not in the cache yet, or deleted: the next event says which
		case err != nil:
			return nil, apiError(err, "read sandbox %q", name)
		case sb.UID != uid || sb.DeletionTimestamp != nil:
			return nil, errinfo.Newf(codes.Aborted, errinfo.ReasonSandboxDeletedWhileWaiting, "sandbox %q was deleted while waiting for it to start", name)
		default:
			last = describe(sb)
			switch phaseOf(sb) {
			case v1alpha1.SandboxRunning:
				return sandboxToProto(sb), nil
			case v1alpha1.SandboxFailed:
				return nil, errinfo.Newf(codes.Unavailable, errinfo.ReasonSandboxStartFailed, "sandbox %q failed to start: %s", name, sb.Status.Message)
			case v1alpha1.SandboxExpired:
				return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxExpired, "sandbox %q has expired", name)
			}
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return nil, waitError(ctx, "sandbox "+name, last)
		}
	}
}

func (b *Backend) template(ctx context.Context, ns, name string) (*v1alpha1.SandboxTemplate, error) {
	t := &v1alpha1.SandboxTemplate{}
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errinfo.Newf(codes.NotFound, errinfo.ReasonTemplateNotFound, "template %q not found in namespace %q", name, ns)
		}
		return nil, apiError(err, "read template %q", name)
	}
	return t, nil
}

// objectMeta names a new claim or sandbox: after its request id when there is
// one (so a retry meets its first attempt), else generated from the template.
func objectMeta(ns, template, requestID string) metav1.ObjectMeta {
	prefix := template
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	m := metav1.ObjectMeta{Namespace: ns, GenerateName: prefix + "-"}
	if requestID != "" {
		sum := sha256.Sum256([]byte(requestID))
		m.Name, m.GenerateName = prefix+"-"+hex.EncodeToString(sum[:])[:12], ""
		m.Annotations = map[string]string{v1alpha1.AnnotationRequestID: requestID}
	}
	return m
}

// requestLifecycle is the lifecycle a request asks for (ttl counts from now).
func requestLifecycle(now time.Time, ttl *durationpb.Duration, at *timestamppb.Timestamp, p sandpodv1.ShutdownPolicy) v1alpha1.Lifecycle {
	l := v1alpha1.Lifecycle{ShutdownPolicy: protoconv.PolicyFromProto(p)}
	switch {
	case at != nil:
		t := metav1.NewTime(at.AsTime())
		l.ShutdownTime = &t
	case ttl != nil && ttl.AsDuration() > 0:
		t := metav1.NewTime(now.Add(ttl.AsDuration()))
		l.ShutdownTime = &t
	}
	return l
}

func envVars(m map[string]string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for k, v := range m {
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	// A stable order keeps the object (and its diffs) deterministic.
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// describe is a sandbox's phase and why it is not ready, as the controller
// reported it (e.g. "Pending: PodPending: main: ErrImagePull").
func describe(sb *v1alpha1.Sandbox) string {
	out := string(phaseOf(sb))
	if sb.Status.Message != "" {
		return out + ": " + sb.Status.Message
	}
	if c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		out += ": " + c.Reason
		if c.Message != "" {
			out += ": " + c.Message
		}
	}
	return out
}

// answerMargin is how long before the caller's deadline a wait gives up, so
// that its answer (what the sandbox is waiting for) reaches the caller
// instead of the caller's bare "deadline exceeded".
const answerMargin = 500 * time.Millisecond

func answerBeforeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) > 2*answerMargin {
		return context.WithDeadline(ctx, d.Add(-answerMargin))
	}
	return context.WithCancel(ctx)
}
