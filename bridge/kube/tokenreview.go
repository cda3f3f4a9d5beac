package kube

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// reviewCacheTTL is how long a token review or an access decision is reused;
// reviewCacheMax bounds each cache (it is emptied when full).
const (
	reviewCacheTTL = time.Minute
	reviewCacheMax = 10000
)

// TokenReviewer authenticates Kubernetes tokens (a service account's, or
// any token the API server accepts) with a TokenReview, and authorizes each
// namespace with a SubjectAccessReview: may this user create SandboxClaims
// there? So the cluster's own RBAC says who may use sandpod where.
type TokenReviewer struct {
	cs kubernetes.Interface

	mu     sync.Mutex
	users  map[[32]byte]reviewed
	access map[accessKey]decided
}

type reviewed struct {
	user    authnv1.UserInfo
	ok      bool
	expires time.Time
}

type accessKey struct{ user, ns string }

type decided struct {
	allowed bool
	reason  string
	expires time.Time
}

// NewTokenReviewer uses cfg's identity, which needs create on tokenreviews
// and subjectaccessreviews (the system:auth-delegator ClusterRole).
func NewTokenReviewer(cfg *rest.Config) (*TokenReviewer, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &TokenReviewer{cs: cs, users: map[[32]byte]reviewed{}, access: map[accessKey]decided{}}, nil
}

// Authenticate reviews token; (nil, nil) when the API server does not know it.
func (r *TokenReviewer) Authenticate(ctx context.Context, token string) (*bridge.Caller, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	r.mu.Lock()
	rv, ok := r.users[key]
	r.mu.Unlock()
	if !ok || now.After(rv.expires) {
		res, err := r.cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			return nil, errinfo.Newf(codes.Unavailable, errinfo.ReasonAuthUnavailable, "token review: %v", err)
		}
		rv = reviewed{user: res.Status.User, ok: res.Status.Authenticated, expires: now.Add(reviewCacheTTL)}
		r.mu.Lock()
		if len(r.users) >= reviewCacheMax {
			r.users = map[[32]byte]reviewed{}
		}
		r.users[key] = rv
		r.mu.Unlock()
	}
	if !rv.ok {
		return nil, nil
	}
	user := rv.user
	return &bridge.Caller{Name: user.Username, Allow: func(ctx context.Context, ns string) error { return r.allow(ctx, user, ns) }}, nil
}

func (r *TokenReviewer) allow(ctx context.Context, user authnv1.UserInfo, ns string) error {
	key := accessKey{user.Username, ns}
	now := time.Now()
	r.mu.Lock()
	d, ok := r.access[key]
	r.mu.Unlock()
	if !ok || now.After(d.expires) {
		extra := map[string]authzv1.ExtraValue{}
		for k, v := range user.Extra {
			extra[k] = authzv1.ExtraValue(v)
		}
		res, err := r.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: ns, Verb: "create", Group: v1alpha1.GroupVersion.Group, Resource: "sandboxclaims",
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			return errinfo.Newf(codes.Unavailable, errinfo.ReasonAuthUnavailable, "access review: %v", err)
		}
		d = decided{allowed: res.Status.Allowed, reason: res.Status.Reason, expires: now.Add(reviewCacheTTL)}
		r.mu.Lock()
		if len(r.access) >= reviewCacheMax {
			r.access = map[accessKey]decided{}
		}
		r.access[key] = d
		r.mu.Unlock()
	}
	if !d.allowed {
		return errinfo.Newf(codes.PermissionDenied, errinfo.ReasonNamespaceForbidden, "namespace %q: %s may not create sandboxclaims.sandpod.dev there (Kubernetes RBAC)", ns, user.Username)
	}
	return nil
}
