package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// ClaimSandbox creates a SandboxClaim and waits, on the cache's events, for
// the sandbox the controller binds to it to be ready. With a request id the
// claim's name is derived from it, so a retried call finds the claim of its
// first attempt instead of claiming twice.
func (b *Backend) ClaimSandbox(ctx context.Context, req *sandpodv1.ClaimSandboxRequest) (*sandpodv1.Sandbox, bool, error) {
	ns := nsOr(req.GetNamespace())
	if _, err := b.template(ctx, ns, req.GetTemplate()); err != nil {
		return nil, false, err
	}
	c := &v1alpha1.SandboxClaim{
		ObjectMeta: objectMeta(ns, req.GetTemplate(), req.GetRequestId()),
		Spec: v1alpha1.SandboxClaimSpec{
			TemplateRef: v1alpha1.TemplateRef{Name: req.GetTemplate()},
			Lifecycle:   requestLifecycle(b.now(), req.GetTtl(), req.GetShutdownTime(), req.GetShutdownPolicy()),
			Env:         envVars(req.GetEnv()),
			Labels:      req.GetLabels(),
		},
	}
	if err := checkUserLabels(req.GetLabels()); err != nil {
		return nil, false, err
	}
	err := b.client.Create(ctx, c)
	if apierrors.IsAlreadyExists(err) && req.GetRequestId() != "" {
		c, err = b.retriedClaim(ctx, ns, c.Name, req.GetRequestId(), req.GetTemplate())
	}
	if err != nil {
		return nil, false, apiError(err, "claim a %q sandbox", req.GetTemplate())
	}
	return b.waitClaim(ctx, ns, c.Name, c.UID)
}

// retriedClaim is the claim a retried request made on its first attempt.
func (b *Backend) retriedClaim(ctx context.Context, ns, name, requestID, template string) (*v1alpha1.SandboxClaim, error) {
	c := &v1alpha1.SandboxClaim{}
	if err := b.live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) { // deleted since: the first attempt's sandbox is gone
			return nil, status.Errorf(codes.NotFound, "request id %q was used by a claim that has since been deleted", requestID)
		}
		return nil, err
	}
	if c.Annotations[v1alpha1.AnnotationRequestID] != requestID || c.Spec.TemplateRef.Name != template {
		return nil, status.Errorf(codes.AlreadyExists, "claim %q exists for another request; use a new request id", name)
	}
	return c, nil
}

// waitClaim waits until the claim's sandbox is ready. It looks at the bound
// sandbox first: a warm adoption makes it ready in the same write that binds
// it, before the controller writes the claim's status.
func (b *Backend) waitClaim(ctx context.Context, ns, name string, uid types.UID) (*sandpodv1.Sandbox, bool, error) {
	woken, stop := b.hub.listen(claimKey(ns, name))
	defer stop()
	var last string
	for {
		sb, err := b.boundSandbox(ctx, ns, name, uid)
		if err != nil {
			return nil, false, err
		}
		if sb != nil {
			last = describe(sb)
			switch phaseOf(sb) {
			case v1alpha1.SandboxRunning:
				_, warm := sb.Annotations[v1alpha1.AnnotationFromPool]
				return sandboxToProto(sb), warm, nil
			case v1alpha1.SandboxFailed:
				return nil, false, status.Errorf(codes.Unavailable, "sandbox %q of the claim failed to start: %s", sb.Name, sb.Status.Message)
			}
		} else if err := b.claimProblem(ctx, ns, name, uid); err != nil {
			return nil, false, err
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return nil, false, waitError(ctx, "claim "+name, last)
		}
	}
}

// boundSandbox is the sandbox bound to claim uid, from the cache (nil if none yet).
func (b *Backend) boundSandbox(ctx context.Context, ns, claim string, uid types.UID) (*v1alpha1.Sandbox, error) {
	var list v1alpha1.SandboxList
	if err := b.client.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{indexClaim: claim}); err != nil {
		return nil, apiError(err, "list the sandboxes of claim %q", claim)
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.UID == uid && ref.Controller != nil && *ref.Controller {
				return &list.Items[i], nil
			}
		}
	}
	return nil, nil
}

// claimProblem reports a claim the controller cannot serve, or one deleted
// while the call waited.
func (b *Backend) claimProblem(ctx context.Context, ns, name string, uid types.UID) error {
	c := &v1alpha1.SandboxClaim{}
	err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)
	if apierrors.IsNotFound(err) {
		return nil // not in the cache yet
	}
	if err != nil {
		return apiError(err, "read claim %q", name)
	}
	if c.UID != uid || c.DeletionTimestamp != nil {
		return status.Errorf(codes.Aborted, "claim %q was deleted while waiting for its sandbox", name)
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); cond != nil &&
		cond.Status == metav1.ConditionFalse && cond.Reason == v1alpha1.ReasonTemplateNotFound {
		return status.Errorf(codes.NotFound, "claim %q: %s", name, cond.Message)
	}
	return nil
}

// CreateSandbox creates a Sandbox from a template (cold: warm pools serve
// claims) and waits for it to be ready unless asked not to.
func (b *Backend) CreateSandbox(ctx context.Context, req *sandpodv1.CreateSandboxRequest) (*sandpodv1.Sandbox, error) {
	ns := nsOr(req.GetNamespace())
	tmpl, err := b.template(ctx, ns, req.GetTemplate())
	if err != nil {
		return nil, err
	}
	if err := checkUserLabels(req.GetLabels()); err != nil {
		return nil, err
	}
	now := b.now()
	sb := &v1alpha1.Sandbox{
		ObjectMeta: objectMeta(ns, req.GetTemplate(), req.GetRequestId()),
		Spec:       lifecycle.SandboxSpecFromTemplate(tmpl.Name, &tmpl.Spec),
	}
	if req.GetName() != "" {
		sb.Name, sb.GenerateName = req.GetName(), ""
	}
	sb.Labels = map[string]string{v1alpha1.LabelTemplate: tmpl.Name}
	for k, v := range req.GetLabels() {
		sb.Labels[k] = v
	}
	sb.Spec.Env = envVars(req.GetEnv())
	sb.Spec.Lifecycle = lifecycle.ClaimLifecycle(now,
		requestLifecycle(now, req.GetTtl(), req.GetShutdownTime(), req.GetShutdownPolicy()), tmpl.Spec.Lifecycle)

	err = b.client.Create(ctx, sb)
	if apierrors.IsAlreadyExists(err) && req.GetRequestId() != "" {
		existing := &v1alpha1.Sandbox{}
		if gerr := b.live.Get(ctx, client.ObjectKeyFromObject(sb), existing); gerr == nil &&
			existing.Annotations[v1alpha1.AnnotationRequestID] == req.GetRequestId() {
			sb, err = existing, nil // a retry of the request that created it
		}
	}
	if apierrors.IsAlreadyExists(err) {
		return nil, status.Errorf(codes.AlreadyExists, "sandbox %q already exists in namespace %q", sb.Name, ns)
	}
	if err != nil {
		return nil, apiError(err, "create a %q sandbox", req.GetTemplate())
	}
	if req.GetNoWait() {
		return sandboxToProto(sb), nil
	}
	return b.waitRunning(ctx, ns, sb.Name, sb.UID)
}

// waitRunning waits for a sandbox to be ready (or to fail).
func (b *Backend) waitRunning(ctx context.Context, ns, name string, uid types.UID) (*sandpodv1.Sandbox, error) {
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
			return nil, status.Errorf(codes.Aborted, "sandbox %q was deleted while waiting for it to start", name)
		default:
			last = describe(sb)
			switch phaseOf(sb) {
			case v1alpha1.SandboxRunning:
				return sandboxToProto(sb), nil
			case v1alpha1.SandboxFailed:
				return nil, status.Errorf(codes.Unavailable, "sandbox %q failed to start: %s", name, sb.Status.Message)
			case v1alpha1.SandboxExpired:
				return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q has expired", name)
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
			return nil, status.Errorf(codes.NotFound, "template %q not found in namespace %q", name, ns)
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

// checkUserLabels keeps callers out of the labels sandpod itself uses to
// find pool members and claims.
func checkUserLabels(m map[string]string) error {
	for k := range m {
		if strings.HasPrefix(k, "sandpod.dev/") {
			return status.Errorf(codes.InvalidArgument, "labels: key %q: the sandpod.dev/ prefix is reserved", k)
		}
	}
	return nil
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
