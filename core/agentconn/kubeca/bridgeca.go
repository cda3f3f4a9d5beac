package kubeca

import (
	"context"
	"crypto/tls"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// BridgeCA is how the bridge reaches the agents of pods made with the bridge
// CA (status.agentAuth ClientCertificate): it reads the CA Secret the
// controller keeps in its namespace (one GET by name; again, with back-off,
// while it is missing or unreadable), mints its own short-lived client
// certificate from it (ClientCerts), and keeps one TLS config per
// sandbox incarnation (its identity comes from the UID).
type BridgeCA struct {
	ns  string
	now func() time.Time

	// reviews authenticates agents by their identity tokens (shared by
	// every sandbox: one TokenReview per agent pod per token).
	reviews *agentconn.Reviews

	mu      sync.Mutex
	certs   *agentconn.ClientCerts
	check   *agentconn.AgentCheck
	lastTry time.Time
	wait    time.Duration // before the next read after a failed one
	lastErr error
	byUID   map[types.UID]*tls.Config
}

// CA read back-off: a bridge that starts before the controller made the CA
// reads again soon, one that finds no CA for long reads seldom.
const (
	caRetryMin = time.Second
	caRetryMax = 30 * time.Second
)

// NewBridgeCA reads the CA from namespace ns when first needed and checks
// agents with review.
func NewBridgeCA(ns string, now func() time.Time, review agentconn.ReviewFunc) *BridgeCA {
	return &BridgeCA{ns: ns, now: now, byUID: map[types.UID]*tls.Config{},
		reviews: agentconn.NewReviews(review, v1alpha1.AgentTokenAudience, now)}
}

// ReviewAgentToken is a ReviewFunc asking the API server (create tokenreviews,
// which the bridge has for --token-review too; the review is stored
// nowhere).
func ReviewAgentToken(c client.Client) agentconn.ReviewFunc {
	return func(ctx context.Context, token string) (agentconn.Review, error) {
		tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{v1alpha1.AgentTokenAudience}}}
		if err := c.Create(ctx, tr); err != nil {
			return agentconn.Review{}, err
		}
		extra := map[string][]string{}
		for k, v := range tr.Status.User.Extra {
			extra[k] = v
		}
		return agentconn.Review{Authenticated: tr.Status.Authenticated, Audiences: tr.Status.Audiences,
			Username: tr.Status.User.Username, Extra: extra, Error: tr.Status.Error}, nil
	}
}

// Config is the TLS to sb's agent.
func (a *BridgeCA) Config(ctx context.Context, r client.Reader, sb *v1alpha1.Sandbox) (*tls.Config, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cfg, ok := a.byUID[sb.UID]; ok {
		return cfg, nil
	}
	if err := a.loadLocked(ctx, r); err != nil {
		return nil, err
	}
	// The pod is named after the sandbox, in its namespace
	// (core/controller/sandbox/pod.go); its UID changes with each pod and
	// is not in the sandbox's status, so the namespace is the boundary: a
	// pod of that name there is the sandbox's, whoever made it.
	want := agentconn.Expect{Identity: agentconn.Identity(string(sb.UID)), Namespace: sb.Namespace, PodName: sb.Name}
	cfg := agentconn.ClientConfig(want, a.certs.Get, a.check)
	a.byUID[sb.UID] = cfg
	return cfg, nil
}

// loadLocked reads the CA unless it was read, or was tried too recently.
// The CA is immutable, so once read it is kept for the bridge's life (a
// new CA means restarting the bridge, docs/security.md).
func (a *BridgeCA) loadLocked(ctx context.Context, r client.Reader) error {
	if a.certs != nil {
		return nil
	}
	now := a.now()
	if a.lastErr != nil && now.Sub(a.lastTry) < a.wait {
		return a.lastErr
	}
	a.lastTry = now
	sec := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: agentconn.CASecretName}, sec)
	if err == nil {
		var ca *agentconn.CA
		if ca, err = agentconn.ParseCA(sec.Data[agentconn.SecretKeyCACert], sec.Data[agentconn.SecretKeyCAKey]); err == nil {
			a.certs, a.lastErr, a.wait = agentconn.NewClientCerts(ca, a.now), nil, 0
			a.check = &agentconn.AgentCheck{CA: ca, Reviews: a.reviews}
			return nil
		}
	}
	what := "could not be read: " + errString(err)
	if apierrors.IsNotFound(err) {
		what = "does not exist yet (the controller makes it at start)"
	}
	a.wait = min(max(2*a.wait, caRetryMin), caRetryMax)
	a.lastErr = errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentCANotReady,
		"the agents' agentconn.CA (Secret %s/%s) %s; retry", a.ns, agentconn.CASecretName, what)
	return a.lastErr
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (a *BridgeCA) Forget(uid types.UID) {
	a.mu.Lock()
	delete(a.byUID, uid)
	a.mu.Unlock()
}
