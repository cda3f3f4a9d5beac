package kube

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Agent returns the agent of a running sandbox: its pod's IP on the agent
// port, with the secret from the sandbox's Secret. A suspended sandbox is
// resumed first when its template auto-resumes (FailedPrecondition
// otherwise); a starting one is waited for. An unclaimed pool member is
// refused (lifecycle.MayReach): nothing is planted for its next claimer.
func (b *Backend) Agent(ctx context.Context, ns, name string) (agentconn.Endpoint, error) {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return agentconn.Endpoint{}, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallAgent, sb); err != nil {
		return agentconn.Endpoint{}, err
	}
	// Paused or resumed a moment ago: the controller may not have reported it yet.
	switch phase := reportedPhase(sb); phase {
	case v1alpha1.SandboxPaused:
		if !sb.Spec.AutoResume {
			return agentconn.Endpoint{}, protoconv.AgentRefusal(ns, name, phase, "")
		}
		if _, err := b.ResumeSandbox(ctx, ns, name, true); err != nil {
			return agentconn.Endpoint{}, err
		}
	case v1alpha1.SandboxSuspended:
		if !sb.Spec.AutoResume {
			return agentconn.Endpoint{}, protoconv.AgentRefusal(ns, name, phase, "")
		}
		if _, err := b.ResumeSandbox(ctx, ns, name, true); err != nil {
			return agentconn.Endpoint{}, err
		}
	case v1alpha1.SandboxExpired, v1alpha1.SandboxFailed:
		return agentconn.Endpoint{}, protoconv.AgentRefusal(ns, name, phase, sb.Status.Message)
	case v1alpha1.SandboxTerminating:
		return agentconn.Endpoint{}, errinfo.SandboxGone(ns, name, fmt.Sprintf("sandbox %q is being deleted", name))
	case v1alpha1.SandboxPending:
		if _, err := b.waitRunning(ctx, ns, name, sb.UID); err != nil {
			return agentconn.Endpoint{}, err
		}
	}
	if sb, err = b.sandbox(ctx, ns, name); err != nil {
		return agentconn.Endpoint{}, err
	}
	if sb.Spec.OperatingMode == v1alpha1.OperatingModePaused {
		return agentconn.Endpoint{}, protoconv.AgentRefusal(ns, name, v1alpha1.SandboxPaused, "") // paused again meanwhile
	}
	if len(sb.Status.PodIPs) == 0 || reportedPhase(sb) != v1alpha1.SandboxRunning {
		return agentconn.Endpoint{}, errinfo.Newf(codes.Unavailable, errinfo.ReasonSandboxNotRunning, "sandbox %q is not running right now (%s); retry", name, reportedPhase(sb))
	}
	ep, err := b.endpoint(ctx, sb)
	if err != nil {
		return agentconn.Endpoint{}, err
	}
	b.activity.touch(sb)
	ep.Done = func() { b.activity.touch(sb) }
	return ep, nil
}

// endpoint is how to reach sb's agent: its pod's IP on the agent port, over
// TLS with the bridge's client certificate (status.agentAuth
// ClientCertificate), or, for a pod an earlier controller made, with the
// secret and pinned certificate of the sandbox's Secret.
func (b *Backend) endpoint(ctx context.Context, sb *v1alpha1.Sandbox) (agentconn.Endpoint, error) {
	var creds agentCreds
	var err error
	switch {
	case sb.Status.AgentAuth == v1alpha1.AgentAuthClientCertificate:
		creds.tls, err = b.agentCA.Config(ctx, b.live, sb)
	case b.secrets == nil:
		return agentconn.Endpoint{}, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonAgentLegacyPod,
			"sandbox %q: its pod was made by an earlier sandpod controller, whose agent authenticates with a per-sandbox Secret that this bridge does not read: "+
				"delete the pod (kubectl -n %s delete pod %s; the controller makes a new one, volumes kept, processes not) or run the bridge with --legacy-agent-secrets and the RBAC rule docs/install.md gives",
			sb.Name, sb.Namespace, sb.Name)
	default:
		creds, err = b.secrets.get(ctx, b.live, sb)
	}
	if err != nil {
		return agentconn.Endpoint{}, err
	}
	env := map[string]string{}
	for _, e := range sb.Spec.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return agentconn.Endpoint{
		Target: net.JoinHostPort(sb.Status.PodIPs[0], strconv.Itoa(v1alpha1.AgentPort)),
		Secret: creds.secret,
		TLS:    creds.tls,
		Env:    env,
	}, nil
}

// agentCreds are what the bridge needs to reach one sandbox's agent.
type agentCreds struct {
	secret string
	// tls pins the agent's own certificate; nil for a Secret made before
	// agents had certificates (that agent serves plaintext too).
	tls *tls.Config
}

// secretCache keeps each sandbox's agent credentials after their first read:
// the bridge reads Secrets one by one (it may not list or watch them), and
// they never change (the Secret is immutable).
type secretCache struct {
	mu    sync.Mutex
	byUID map[types.UID]agentCreds
}

func newSecretCache() *secretCache { return &secretCache{byUID: map[types.UID]agentCreds{}} }

func (s *secretCache) get(ctx context.Context, r client.Reader, sb *v1alpha1.Sandbox) (agentCreds, error) {
	s.mu.Lock()
	v, ok := s.byUID[sb.UID]
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	sec := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: v1alpha1.SecretName(sb.Name)}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return v, errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentSecretNotReady, "sandbox %q: its agent secret does not exist yet; retry", sb.Name)
		}
		return v, apiError(err, "read the agent secret of sandbox %q", sb.Name)
	}
	if !metav1.IsControlledBy(sec, sb) {
		return v, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonAgentSecretUntrusted, "sandbox %q: secret %q is not owned by the sandbox; refusing to use it", sb.Name, sec.Name)
	}
	v.secret = string(sec.Data[v1alpha1.SecretKeyAgent])
	if v.secret == "" {
		return v, errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentSecretNotReady, "sandbox %q: its agent secret is empty; retry", sb.Name)
	}
	if cert := sec.Data[v1alpha1.SecretKeyTLSCert]; len(cert) > 0 {
		var err error
		if v.tls, err = agentconn.ClientTLS(cert, sb.Name); err != nil {
			return v, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonAgentSecretUntrusted, "sandbox %q: secret %q: %v", sb.Name, sec.Name, err)
		}
	}
	s.mu.Lock()
	s.byUID[sb.UID] = v
	s.mu.Unlock()
	return v, nil
}

// forget drops a deleted sandbox's credentials; a nil cache (no
// --legacy-agent-secrets, the default) has none.
func (s *secretCache) forget(uid types.UID) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.byUID, uid)
	s.mu.Unlock()
}

// activity records exec and file calls in status.lastActivityTime, which
// drives the controller's idle suspend. It writes at most once per interval
// per sandbox (a quarter of the idle timeout when that is shorter), in the
// background, so a call never waits for the API server.
type activity struct {
	client   client.Client
	interval time.Duration
	log      *slog.Logger

	mu   sync.Mutex
	last map[string]time.Time
}

func newActivity(c client.Client, interval time.Duration, log *slog.Logger) *activity {
	return &activity{client: c, interval: interval, log: log, last: map[string]time.Time{}}
}

func (a *activity) touch(sb *v1alpha1.Sandbox) {
	every := a.interval
	if d := sb.Spec.Lifecycle.IdleTimeout; d != nil && d.Duration > 0 && d.Duration/4 < every {
		every = max(d.Duration/4, 100*time.Millisecond)
	}
	key := sb.Namespace + "/" + sb.Name
	now := time.Now()
	a.mu.Lock()
	if now.Sub(a.last[key]) < every {
		a.mu.Unlock()
		return
	}
	a.last[key] = now
	a.mu.Unlock()

	ns, name := sb.Namespace, sb.Name
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		body, _ := json.Marshal(map[string]any{"status": map[string]any{"lastActivityTime": metav1.NewTime(now)}})
		target := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := a.client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil && !apierrors.IsNotFound(err) {
			a.log.Warn("record sandbox activity", "sandbox", key, "err", err)
		}
	}()
}

// lastTouch is when this bridge last saw a call to the sandbox (zero if
// never).
func (a *activity) lastTouch(ns, name string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last[ns+"/"+name]
}

func (a *activity) forget(ns, name string) {
	a.mu.Lock()
	delete(a.last, ns+"/"+name)
	a.mu.Unlock()
}
