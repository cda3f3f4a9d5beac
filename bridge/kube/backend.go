// Package kube is the bridge's Kubernetes backend. Lifecycle calls become
// writes to sandpod's custom resources (core/api/v1alpha1), which the
// controller reconciles: a warm claim is one patch that takes a ready pool
// member, a cold claim or a create is a new Sandbox, suspend and resume flip
// a Sandbox's operating mode. Reads come from an informer cache; a call that
// waits (cold claim, create, resume) waits on that cache's watch events,
// never on a polling loop. Exec and file calls reach the agent at the pod's
// IP over TLS with the bridge's client certificate (kubeca.BridgeCA; the secret
// of the sandbox's Secret for pods of earlier controllers).
package kube

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/agentconn/kubeca"
	"github.com/sandpod/sandpod/core/api/fieldindex"
	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lowmem"
)

// DefaultNamespace is used when a request names none (as in the local engine).
const DefaultNamespace = "default"

// indexRequestID finds the sandbox a client request id produced.
const indexRequestID = "sandpod.requestID"

// Options configure the backend.
type Options struct {
	// Namespaces limits the bridge to these namespaces (all when empty).
	Namespaces []string
	// ActivityInterval is the longest the bridge waits before it records an
	// exec or file call in status.lastActivityTime (default 10s; shorter for
	// sandboxes whose idle timeout is short).
	ActivityInterval time.Duration
	// SyncTimeout bounds the initial cache sync (default 2m).
	SyncTimeout time.Duration
	Logger      *slog.Logger
	// ClusterDomain is the cluster's DNS domain (default cluster.local): the
	// service name of a sandbox the controller has not given one yet.
	ClusterDomain string
	// AgentCANamespace holds the agents' bridge CA, Secret sandpod-agent-ca
	// (default: agentconn.OwnNamespace).
	AgentCANamespace string
	// LegacyAgentSecrets lets the bridge reach agents of pods an earlier
	// controller made (status.agentAuth empty) with their per-sandbox
	// Secret, which needs `get secrets` in every namespace. Off, such a
	// sandbox is refused (AGENT_LEGACY_POD) and the bridge reads no Secret
	// but the CA.
	LegacyAgentSecrets bool
}

// Backend implements bridge.Backend on a cluster.
type Backend struct {
	cache  crcache.Cache
	client client.Client // writes, and reads through the cache
	// live reads from the API server, past the cache: Secrets (never
	// cached), and the rare reads that must not be answered by a cache that
	// lags (a member still unclaimed before refusing a call, a conflict's
	// object, a template applied a moment ago).
	live    client.Reader
	hub     *hub
	taken   *adopt.Taken
	members *adopt.Index
	recent  *recentWrites
	// uncertain: takes whose write's outcome was lost (uncertain.go).
	uncertain uncertainTakes
	secrets   *secretCache // nil unless Options.LegacyAgentSecrets
	agentCA   *kubeca.BridgeCA
	activity  *activity
	log       *slog.Logger
	now       func() time.Time
	quota     quotaState // quota.go

	// requests serializes the creates and claims of one request id.
	requests requestLocks

	// clusterDomain is Options.ClusterDomain (empty: the default), for the
	// service names of sandboxes the controller has not named yet.
	clusterDomain string
	// takes bounds the warm takes at the API server at once (takeslots.go).
	takes takeSlots
}

// New starts the backend's informers and returns once they have synced. The
// informers stop with ctx.
func New(ctx context.Context, cfg *rest.Config, o Options) (*Backend, error) {
	if o.ActivityInterval <= 0 {
		o.ActivityInterval = 10 * time.Second
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	scheme, err := apischeme.New()
	if err != nil {
		return nil, err
	}
	// managedFields are never read here and are most of a cached sandbox's
	// metadata: the bridge caches every sandbox of its namespaces.
	// Sandboxes are also kept without their pod template (lowmem.SandboxTransform).
	co := crcache.Options{Scheme: scheme, DefaultTransform: crcache.TransformStripManagedFields(),
		ByObject: map[client.Object]crcache.ByObject{&v1alpha1.Sandbox{}: {Transform: lowmem.SandboxTransform()}}}
	if len(o.Namespaces) > 0 {
		co.DefaultNamespaces = map[string]crcache.Config{}
		for _, ns := range o.Namespaces {
			co.DefaultNamespaces[ns] = crcache.Config{}
		}
	}
	c, err := crcache.New(cfg, co)
	if err != nil {
		return nil, fmt.Errorf("informer cache: %w", err)
	}
	if err := c.IndexField(ctx, &v1alpha1.Sandbox{}, indexRequestID, func(o client.Object) []string {
		if id := o.GetAnnotations()[v1alpha1.AnnotationRequestID]; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := c.IndexField(ctx, &v1alpha1.Sandbox{}, indexExposureID, exposureIDs); err != nil {
		return nil, err
	}
	if err := c.IndexField(ctx, &v1alpha1.Sandbox{}, fieldindex.SandboxSnapshot, fieldindex.SnapshotOfSandbox); err != nil {
		return nil, err
	}
	if err := c.IndexField(ctx, &v1alpha1.Sandbox{}, indexIdlePause, idlePauseIndex); err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{
		Reader: c, DisableFor: []client.Object{&corev1.Secret{}},
	}})
	if err != nil {
		return nil, err
	}
	// Reads past the cache, with no informer of their own.
	live, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	recent := newRecentWrites()
	taken := adopt.NewTaken(recent.store)
	taken.Keep = slimCopy
	b := &Backend{
		cache: c, client: cl, live: live, hub: newHub(o.ClusterDomain), taken: taken, members: adopt.NewIndex(), recent: recent,
		agentCA: kubeca.NewBridgeCA(agentconn.OwnNamespace(o.AgentCANamespace), time.Now, kubeca.ReviewAgentToken(cl)), log: o.Logger, now: time.Now,
		clusterDomain: o.ClusterDomain, takes: newTakeSlots(),
	}
	b.activity = newActivity(cl, o.ActivityInterval, o.Logger)
	if o.LegacyAgentSecrets {
		b.secrets = newSecretCache()
	}

	for _, obj := range []client.Object{&v1alpha1.Sandbox{}, &v1alpha1.SandboxTemplate{}, &v1alpha1.SandboxWarmPool{}, &v1alpha1.SandboxQuota{}, &v1alpha1.SandboxSnapshot{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("informer for %T: %w", obj, err)
		}
		if _, ok := obj.(*v1alpha1.Sandbox); ok {
			_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc:    func(o any) { b.onSandbox(o, eventAdded) },
				UpdateFunc: func(_, o any) { b.onSandbox(o, eventModified) },
				DeleteFunc: func(o any) { b.onSandbox(o, eventDeleted) },
			})
		}
		if _, ok := obj.(*v1alpha1.SandboxSnapshot); ok {
			_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc:    b.onSnapshot,
				UpdateFunc: func(_, o any) { b.onSnapshot(o) },
				DeleteFunc: b.onSnapshot,
			})
		}
		if err != nil {
			return nil, err
		}
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			o.Logger.Error("informer cache stopped", "err", err)
		}
	}()
	syncCtx, cancel := context.WithTimeout(ctx, o.SyncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("informer cache did not sync within %s: is the API server reachable and are sandpod's CRDs installed?", o.SyncTimeout)
	}
	go b.idlePauseLoop(ctx)
	return b, nil
}

// onSandbox wakes the calls waiting on a sandbox and feeds watchers.
func (b *Backend) onSandbox(o any, t eventType) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	sb, ok := o.(*v1alpha1.Sandbox)
	if !ok {
		return
	}
	// The index first: once a take leaves recent, the index no longer
	// offers the member (adopt.Taken skips it while recent holds it).
	b.members.Update(sb, t == eventDeleted)
	b.recent.seen(sb, t == eventDeleted)
	b.hub.wake(sandboxKey(sb.Namespace, sb.Name))
	if t == eventDeleted {
		b.secrets.forget(sb.UID)
		b.agentCA.Forget(sb.UID)
		b.activity.forget(sb.Namespace, sb.Name)
	}
	b.hub.publish(t, sb)
}

// onSnapshot wakes the calls waiting on a snapshot.
func (b *Backend) onSnapshot(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if s, ok := o.(*v1alpha1.SandboxSnapshot); ok {
		b.hub.wake(snapshotKey(s.Namespace, s.Name))
	}
}

func nsOr(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

func sandboxKey(ns, name string) string { return "sandbox/" + ns + "/" + name }
