package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestObjectMetaNamesRetriesAlike(t *testing.T) {
	a := objectMeta("ns", "python", "req-1")
	b := objectMeta("ns", "python", "req-1")
	c := objectMeta("ns", "python", "req-2")
	if a.Name == "" || a.Name != b.Name || a.Name == c.Name {
		t.Errorf("names %q %q %q: want equal for one request id, different for another", a.Name, b.Name, c.Name)
	}
	if a.Annotations[v1alpha1.AnnotationRequestID] != "req-1" {
		t.Errorf("request id not recorded: %v", a.Annotations)
	}
	if g := objectMeta("ns", "python", ""); g.Name != "" || g.GenerateName != "python-" {
		t.Errorf("without a request id: name %q generateName %q", g.Name, g.GenerateName)
	}
	long := objectMeta("ns", strings.Repeat("a", 39)+"-"+strings.Repeat("b", 23), "r")
	if len(long.Name) > 63 || strings.Contains(long.Name, "--") {
		t.Errorf("long template gives %q (%d chars)", long.Name, len(long.Name))
	}
}

func TestRequestLifecycle(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := requestLifecycle(now, durationpb.New(time.Hour), nil, sandpodv1.ShutdownPolicy_SHUTDOWN_POLICY_RETAIN)
	if l.ShutdownTime == nil || !l.ShutdownTime.Time.Equal(now.Add(time.Hour)) || l.ShutdownPolicy != v1alpha1.ShutdownPolicyRetain {
		t.Errorf("ttl 1h: %+v", l)
	}
	if l := requestLifecycle(now, nil, nil, 0); l.ShutdownTime != nil || l.ShutdownPolicy != "" {
		t.Errorf("nothing asked: %+v", l)
	}
}

func TestAPIErrorCodes(t *testing.T) {
	gr := schema.GroupResource{Group: "sandpod.dev", Resource: "sandboxes"}
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x",
		errors.New("exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10"))
	kept := errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxExpired, "kept")
	for _, c := range []struct {
		err    error
		want   codes.Code
		reason errinfo.Why
	}{
		{apierrors.NewNotFound(gr, "x"), codes.NotFound, errinfo.ReasonKubernetesAPIError},
		{apierrors.NewAlreadyExists(gr, "x"), codes.AlreadyExists, errinfo.ReasonKubernetesAPIError},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), codes.Aborted, errinfo.ReasonKubernetesAPIError},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), codes.PermissionDenied, errinfo.ReasonKubernetesAPIError},
		{quota, codes.PermissionDenied, errinfo.ReasonQuotaExceeded},
		{apierrors.NewInvalid(schema.GroupKind{Group: "sandpod.dev", Kind: "Sandbox"}, "x", nil), codes.InvalidArgument, errinfo.ReasonKubernetesAPIError},
		{apierrors.NewTooManyRequests("slow down", 1), codes.Unavailable, errinfo.ReasonKubernetesAPIError},
		{errors.New("dial tcp: connection refused"), codes.Unavailable, errinfo.ReasonKubernetesAPIError},
		{context.DeadlineExceeded, codes.DeadlineExceeded, errinfo.ReasonCallDeadlineExceeded},
		{context.Canceled, codes.Canceled, errinfo.ReasonCallCanceled},
		{kept, codes.FailedPrecondition, errinfo.ReasonSandboxExpired},
	} {
		err := apiError(c.err, "do it")
		if got := status.Code(err); got != c.want {
			t.Errorf("%v -> %s, want %s", c.err, got, c.want)
		}
		if got := errinfo.Reason(err); got != c.reason {
			t.Errorf("%v -> reason %q, want %s", c.err, got, c.reason)
		}
	}
}

func TestSandboxToProto(t *testing.T) {
	now := metav1.Now()
	member := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "p-1", Labels: map[string]string{v1alpha1.LabelPool: "p"}}}
	if !isPoolMember(member) || sandboxToProto(member, "").GetClaimed() || sandboxToProto(member, "").GetPhase() != sandpodv1.Phase_PHASE_PENDING {
		t.Errorf("an unclaimed pool member without status: %v", sandboxToProto(member, ""))
	}
	adopted := &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "p-1", Labels: map[string]string{v1alpha1.LabelClaim: "c"},
			Annotations: map[string]string{v1alpha1.AnnotationFromPool: "p"}},
		Spec:   v1alpha1.SandboxSpec{Env: []corev1.EnvVar{{Name: "B"}, {Name: "A"}}},
		Status: v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxRunning},
	}
	p := sandboxToProto(adopted, "")
	if !p.GetClaimed() || p.GetPool() != "p" || p.GetPhase() != sandpodv1.Phase_PHASE_RUNNING || strings.Join(p.GetEnvKeys(), ",") != "A,B" {
		t.Errorf("an adopted sandbox: %v", p)
	}
	adopted.DeletionTimestamp = &now
	if sandboxToProto(adopted, "").GetPhase() != sandpodv1.Phase_PHASE_TERMINATING {
		t.Errorf("a deleting sandbox is %s", sandboxToProto(adopted, "").GetPhase())
	}
}

func TestRecentWritesUntilTheCacheCatchesUp(t *testing.T) {
	r := newRecentWrites()
	cached := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1", Generation: 1, ResourceVersion: "1"}}
	written := cached.DeepCopy()
	written.Generation, written.ResourceVersion = 2, "2"
	written.Spec.Env = []corev1.EnvVar{{Name: "TASK", Value: "1"}}
	r.put(written)

	if got := r.fresher("ns", "a", cached); got.Generation != 2 || len(got.Spec.Env) != 1 {
		t.Errorf("a stale cache: got generation %d, want the write (2)", got.Generation)
	}
	if got := r.fresher("ns", "a", nil); got == nil || got.Generation != 2 {
		t.Errorf("not in the cache yet: got %v, want the write", got)
	}
	other := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u2", Generation: 1, ResourceVersion: "3"}}
	if got := r.fresher("ns", "a", other); got.UID != "u2" {
		t.Errorf("a new incarnation of the name: got uid %s", got.UID)
	}
	caught := written.DeepCopy()
	r.seen(caught, false)
	if got := r.fresher("ns", "a", nil); got != nil {
		t.Errorf("entry kept after the cache saw the write: %v", got)
	}
}

// A claim retried before the cache shows the first attempt's take must find
// that sandbox by its request id, not take another member.
func TestRecentWritesByRequestID(t *testing.T) {
	r := newRecentWrites()
	taken := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool-abc", UID: "u1", Generation: 2,
		Annotations: map[string]string{v1alpha1.AnnotationRequestID: "req-1"}}}
	r.put(taken)
	if got := r.byRequestID("ns", "req-1"); got == nil || got.Name != "pool-abc" {
		t.Errorf("byRequestID(req-1) = %v, want pool-abc", got)
	}
	if got := r.byRequestID("other", "req-1"); got != nil {
		t.Errorf("another namespace found %s", got.Name)
	}
	if got := r.byRequestID("ns", "req-2"); got != nil {
		t.Errorf("another request id found %s", got.Name)
	}
	gone := taken.DeepCopy()
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	r.put(gone)
	if got := r.byRequestID("ns", "req-1"); got != nil {
		t.Errorf("a sandbox deleted by this process was found: %s", got.Name)
	}
}

// TestRequestLocks: one request id at a time, others in parallel, and an
// unlock may be repeated.
func TestRequestLocks(t *testing.T) {
	var l requestLocks
	unlock := l.lock("ns", "a")
	other := l.lock("ns", "b") // another id does not wait
	other()
	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		u := l.lock("ns", "a")
		close(got)
		u()
		close(done)
	}()
	select {
	case <-got:
		t.Fatal("a second lock of one request id did not wait for the first")
	case <-time.After(time.Second): // >10x a loaded machine's scheduling delay
	}
	unlock()
	unlock()
	<-done
	l.lock("ns", "")() // no id, no lock
	if len(l.m) != 0 {
		t.Errorf("%d locks left after every unlock, want none", len(l.m))
	}
}
