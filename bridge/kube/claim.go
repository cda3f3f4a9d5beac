package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
//
// The local engine's Claim (core/engine/sandboxes.go) has the same outline
// (request id, source, quota, warm take, cold); it differs where the stores
// do: it runs each step under one mutex with one store write, so it needs no
// request lock, take slots, quota release or uncertain claims, and counts
// the quota only once it has a member to take.
func (b *Backend) ClaimSandbox(ctx context.Context, req *sandpodv1.ClaimSandboxRequest) (got *sandpodv1.Sandbox, warm bool, err error) {
	tr := b.traceClaim(ctx)
	defer func() { tr.done(ctx, b.log, warm, err) }()
	ns := nsOr(req.GetNamespace())
	unlock := b.requests.lock(ns, req.GetRequestId())
	defer unlock()
	if id := req.GetRequestId(); id != "" {
		sb, err := b.byRequestID(ctx, ns, id, methodClaim)
		if err == nil && sb == nil {
			sb, err = b.uncertainClaim(ctx, ns, id)
		}
		if err != nil {
			return nil, false, err
		}
		if sb != nil {
			unlock()
			return b.claimed(ctx, sb)
		}
	}
	tr.mark("request_id")
	snap, tmpl, err := b.fromSnapshot(ctx, ns, req.GetSnapshot(), req.GetTemplate())
	if err != nil {
		return nil, false, err
	}
	tr.mark("template")
	release, err := b.admit(ctx, ns, tmpl.Name)
	if err != nil {
		return nil, false, err
	}
	tr.mark("quota")
	now := b.now()
	holder := adopt.Holder{
		Annotations: handOutAnnotations(now, leaseFor(req.GetLease(), tmpl)),
		Labels:      req.GetLabels(),
		Env:         envVars(req.GetEnv()),
		Lifecycle:   lifecycle.ClaimLifecycle(now, requestLifecycle(now, req.GetTtl(), req.GetShutdownTime(), req.GetShutdownPolicy()), tmpl.Spec.Lifecycle),
		RequestID:   req.GetRequestId(),
		// RestartOnFailure: the request's, else the template's default.
		RestartOnFailure: lifecycle.RestartOnFailure(req.RestartOnFailure, tmpl.Spec.RestartOnFailure),
	}
	if err := b.takes.acquire(ctx); err != nil {
		release("")
		return nil, false, apiError(err, "wait for a turn to take a warm %q sandbox", tmpl.Name)
	}
	tr.mark("turn")
	sb, err := b.adopt(ctx, tmpl, snap, holder, tr)
	b.takes.release()
	tr.mark("take")
	if err != nil {
		release("")
		return nil, false, err
	}
	if sb != nil {
		release(sb.Name)
		defer tr.mark("answer")
		return sandboxToProto(sb, b.clusterDomain), true, nil
	}
	got, err = b.createFromTemplate(ctx, tmpl, snap, "", requestOf(req.GetRequestId(), methodClaim), req.GetLabels(), holder.Env, holder.Lifecycle, false, holder.RestartOnFailure, holder.Annotations, release, unlock)
	return got, false, err
}

// claimed is the answer to a retried claim: the sandbox its first attempt got.
func (b *Backend) claimed(ctx context.Context, sb *v1alpha1.Sandbox) (*sandpodv1.Sandbox, bool, error) {
	_, warm := sb.Annotations[v1alpha1.AnnotationFromPool]
	got, err := b.waitRunning(ctx, sb.Namespace, sb.Name, sb.UID)
	return got, warm, err
}

// The two methods that take a request id, as AnnotationRequestMethod
// records them.
const (
	methodCreate = "create"
	methodClaim  = "claim"
)

// request is a request id and the method that sent it.
type request struct{ id, method string }

func requestOf(id, method string) request { return request{id: id, method: method} }

// byRequestID finds the sandbox a request id made, if it still exists. An
// id names at most one live sandbox: once that sandbox is gone the id is
// free, but while it is being deleted the id still names it (NOT_FOUND,
// REQUEST_ID_SANDBOX_DELETED). An id first used by the other method is
// refused (REQUEST_ID_REUSED), as the local engine does.
func (b *Backend) byRequestID(ctx context.Context, ns, id, method string) (*v1alpha1.Sandbox, error) {
	var list v1alpha1.SandboxList
	if err := b.client.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{indexRequestID: id}); err != nil {
		return nil, apiError(err, "look up request id %q", id)
	}
	var deleting *v1alpha1.Sandbox
	for i := range list.Items {
		// This process's own delete may not be in the cache yet.
		sb := b.recent.fresher(ns, list.Items[i].Name, &list.Items[i])
		if sb.DeletionTimestamp != nil {
			deleting = sb
			continue
		}
		return sb, sameMethod(sb, id, method)
	}
	if sb := b.recent.byRequestID(ns, id); sb != nil {
		return sb, sameMethod(sb, id, method)
	}
	if deleting != nil {
		return nil, requestSandboxDeleted(id, deleting.Name)
	}
	return nil, nil
}

// sameMethod refuses a request id that the other method used first. A
// sandbox made before the method was recorded accepts both.
func sameMethod(sb *v1alpha1.Sandbox, id, method string) error {
	if m := sb.Annotations[v1alpha1.AnnotationRequestMethod]; m != "" && m != method {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonRequestIDReused, "request_id %q was already used by a %s request", id, m)
	}
	return nil
}

func requestSandboxDeleted(id, name string) error {
	return errinfo.Newf(codes.NotFound, errinfo.ReasonRequestIDSandboxDeleted,
		"request_id %q made sandbox %q, which is being deleted; once it is gone the id makes a new one", id, name)
}

// adopt takes the best ready member of the template's pools (adopt.Adoption),
// or returns nil when none is ready. Members come from the index the
// informer's events keep (adopt.Index), not from a list of the cache per
// claim. Members this process is taking or has just taken are skipped
// (adopt.Taken), so concurrent claims spread over the pool instead of
// colliding on its first member while the cache catches up.
func (b *Backend) adopt(ctx context.Context, tmpl *v1alpha1.SandboxTemplate, snapshot string, h adopt.Holder, tr *claimTrace) (*v1alpha1.Sandbox, error) {
	ns, hash := tmpl.Namespace, lifecycle.PoolHash(lifecycle.TemplateHash(tmpl.Spec), snapshot)
	tr.mark("hash")
	sb, name, err := adopt.Adoption{
		Writer: tr.writer(b.client),
		Taken:  b.taken,
		Next: func(skip func(string) bool) (*v1alpha1.Sandbox, bool) {
			return b.members.Pick(ns, tmpl.Name, snapshot, hash, skip)
		},
		Apply: func(sb *v1alpha1.Sandbox) {
			adopt.Take(sb, h)
			if h.RequestID != "" {
				sb.Annotations[v1alpha1.AnnotationRequestMethod] = methodClaim
			}
		},
	}.Run(ctx, ns)
	if err != nil {
		if h.RequestID != "" && adopt.Uncertain(err) {
			b.uncertain.put(ns, h.RequestID, name, b.now())
		}
		return nil, apiError(err, "take warm sandbox %q", name)
	}
	// A take is in b.recent (adopt.Taken records it there): reads see it
	// before the cache does.
	return sb, nil
}

// CreateSandbox creates a Sandbox from a template (cold: warm pools serve
// claims) and waits for it to be ready unless asked not to.
func (b *Backend) CreateSandbox(ctx context.Context, req *sandpodv1.CreateSandboxRequest) (*sandpodv1.Sandbox, error) {
	ns := nsOr(req.GetNamespace())
	unlock := b.requests.lock(ns, req.GetRequestId())
	defer unlock()
	if id := req.GetRequestId(); id != "" {
		// The first request wins, whatever name the retry gives.
		if sb, err := b.byRequestID(ctx, ns, id, methodCreate); err != nil || sb != nil {
			if err != nil {
				return nil, err
			}
			unlock()
			if req.GetNoWait() {
				return sandboxToProto(sb, b.clusterDomain), nil
			}
			return b.waitRunning(ctx, sb.Namespace, sb.Name, sb.UID)
		}
	}
	snap, tmpl, err := b.fromSnapshot(ctx, ns, req.GetSnapshot(), req.GetTemplate())
	if err != nil {
		return nil, err
	}
	// A retry of a known request id was answered above, so this call makes
	// a sandbox: the quota counts it.
	release, err := b.admit(ctx, ns, tmpl.Name)
	if err != nil {
		return nil, err
	}
	now := b.now()
	l := lifecycle.ClaimLifecycle(now, requestLifecycle(now, req.GetTtl(), req.GetShutdownTime(), req.GetShutdownPolicy()), tmpl.Spec.Lifecycle)
	restart := lifecycle.RestartOnFailure(req.RestartOnFailure, tmpl.Spec.RestartOnFailure)
	ann := handOutAnnotations(now, leaseFor(req.GetLease(), tmpl))
	return b.createFromTemplate(ctx, tmpl, snap, req.GetName(), requestOf(req.GetRequestId(), methodCreate), req.GetLabels(), envVars(req.GetEnv()), l, req.GetNoWait(), restart, ann, release, unlock)
}

// createFromTemplate creates a sandbox of tmpl (with its volumes from
// snapshot, if set), named name, else after the
// request id, else generated; a retry of the same request id finds the
// sandbox of its first attempt. release settles the quota's count of the
// call; unlock releases the request id's lock once the sandbox is written,
// before the wait.
func (b *Backend) createFromTemplate(ctx context.Context, tmpl *v1alpha1.SandboxTemplate, snapshot, name string, r request,
	labels map[string]string, env []corev1.EnvVar, l v1alpha1.Lifecycle, noWait, restartOnFailure bool,
	annotations map[string]string, release func(name string), unlock func()) (*sandpodv1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{
		ObjectMeta: objectMeta(tmpl.Namespace, tmpl.Name, r.id),
		Spec:       lifecycle.SandboxSpecFromTemplate(tmpl.Name, &tmpl.Spec),
	}
	if r.id != "" {
		sb.Annotations[v1alpha1.AnnotationRequestMethod] = r.method
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
	if len(annotations) > 0 && sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		sb.Annotations[k] = v
	}
	if snapshot != "" {
		sb.Spec.SnapshotRef = &v1alpha1.SnapshotRef{Name: snapshot}
		sb.Labels[v1alpha1.LabelSnapshot] = snapshot
	}

	err := b.client.Create(ctx, sb)
	if apierrors.IsAlreadyExists(err) && r.id != "" {
		existing := &v1alpha1.Sandbox{}
		if gerr := b.live.Get(ctx, client.ObjectKeyFromObject(sb), existing); gerr == nil &&
			existing.Annotations[v1alpha1.AnnotationRequestID] == r.id {
			// A retry of the request that created it (through another
			// replica, or before this one's cache showed it).
			if existing.DeletionTimestamp != nil {
				release("")
				return nil, requestSandboxDeleted(r.id, existing.Name)
			}
			if err := sameMethod(existing, r.id, r.method); err != nil {
				release("")
				return nil, err
			}
			sb, err = existing, nil
		}
	}
	if err != nil {
		release("")
	}
	if apierrors.IsAlreadyExists(err) {
		return nil, errinfo.Newf(codes.AlreadyExists, errinfo.ReasonSandboxExists, "sandbox %q already exists in namespace %q", sb.Name, sb.Namespace)
	}
	if err != nil {
		return nil, apiError(err, "create a %q sandbox", tmpl.Name)
	}
	b.recent.put(sb)
	release(sb.Name) // after recent.put: the quota counts it from there now
	unlock()
	if noWait {
		return sandboxToProto(sb, b.clusterDomain), nil
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
			// Not in the cache yet (this process wrote it), or deleted.
			if gone, gerr := b.goneLive(ctx, ns, name, uid); gerr != nil {
				return nil, gerr
			} else if gone {
				return nil, deletedWhileWaiting(ns, name)
			}
		case err != nil:
			return nil, apiError(err, "read sandbox %q", name)
		case sb.UID != uid || sb.DeletionTimestamp != nil || b.recent.fresher(ns, name, sb).DeletionTimestamp != nil:
			return nil, deletedWhileWaiting(ns, name)
		default:
			last = describe(sb)
			switch phaseOf(sb) {
			case v1alpha1.SandboxRunning:
				return sandboxToProto(sb, b.clusterDomain), nil
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

// deletedWhileWaiting is the answer of a wait whose sandbox was deleted:
// NOT_FOUND (SANDBOX_NOT_FOUND), as for any call on a deleted sandbox, and
// as the local engine answers.
func deletedWhileWaiting(ns, name string) error {
	return errinfo.SandboxGone(ns, name, fmt.Sprintf("sandbox %q was deleted while waiting for it to start", name))
}

// goneLive says whether a sandbox the cache does not hold is gone: unless
// this process has just written it (the cache lags), the API server says.
func (b *Backend) goneLive(ctx context.Context, ns, name string, uid types.UID) (bool, error) {
	if w := b.recent.fresher(ns, name, nil); w != nil && w.UID == uid {
		return w.DeletionTimestamp != nil, nil
	}
	sb := &v1alpha1.Sandbox{}
	err := b.live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, apiError(err, "read sandbox %q", name)
	}
	return sb.UID != uid || sb.DeletionTimestamp != nil, nil
}

// template reads a template from the cache and, when the cache does not
// hold it, from the API server: a template applied a moment ago may not have
// reached this bridge's cache yet, and a claim right after `kubectl apply`
// must not be told it does not exist.
func (b *Backend) template(ctx context.Context, ns, name string) (*v1alpha1.SandboxTemplate, error) {
	t := &v1alpha1.SandboxTemplate{}
	key := client.ObjectKey{Namespace: ns, Name: name}
	err := b.client.Get(ctx, key, t)
	if apierrors.IsNotFound(err) {
		err = b.live.Get(ctx, key, t)
	}
	if err != nil {
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

// answerBeforeDeadline ends a wait lifecycle.WaitMargin before the
// caller's deadline, so the caller gets the wait's answer.
func answerBeforeDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, lifecycle.WaitDeadline(time.Now(), d))
	}
	return context.WithCancel(ctx)
}
