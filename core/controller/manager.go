// Package controller wires sandpod's reconcilers into a controller-runtime
// manager: the informer cache (narrowed to sandpod's own children), field
// indexes, metrics, and one controller per kind.
package controller

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/agentconn/kubeca"
	"github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/claim"
	"github.com/sandpod/sandpod/core/controller/index"
	"github.com/sandpod/sandpod/core/controller/metrics"
	"github.com/sandpod/sandpod/core/controller/sandbox"
	"github.com/sandpod/sandpod/core/controller/snapshot"
	"github.com/sandpod/sandpod/core/controller/template"
	"github.com/sandpod/sandpod/core/controller/warmpool"
	"github.com/sandpod/sandpod/core/lowmem"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

// DefaultAgentImage is the image whose sandpod binary is copied into pods.
const DefaultAgentImage = "ghcr.io/sandpod/sandpod:latest"

// Options configure the controllers.
type Options struct {
	// AgentImage holds the sandpod binary injected into every sandbox pod.
	AgentImage string
	// AgentDelivery is how (default: an init container copies it).
	AgentDelivery sandbox.AgentDelivery
	// RuntimeClass is the controller-wide RuntimeClass policy.
	RuntimeClass sandbox.RuntimeClassPolicy
	// Clock is the time source (default: the real clock).
	Clock clock.Clock
	// Workers is the number of concurrent reconciles per kind (default 8;
	// claims get four times as many).
	Workers int
	// PoolBatch caps the members a pool creates per pass (default 16).
	PoolBatch int
	// PoolRefillDelay is how long claims must pause before a pool refills
	// (at most 10 times as long once its deficit appeared; a pool below
	// half its size waits only this long after its deficit appeared), so
	// refills yield to claims and go out as one batch after a burst
	// (default 1s; negative: at once; warmpool.Pacer).
	PoolRefillDelay time.Duration
	// ClusterDomain is the cluster's DNS domain, in the sandboxes'
	// status.serviceFQDN (default cluster.local).
	ClusterDomain string
	// KeepManagedFields: new pool members keep their managedFields (one
	// write fewer per member; every later write of theirs tracked).
	KeepManagedFields bool
	// ExtraDNS are DNS servers besides kube-system's pods that managed
	// NetworkPolicies allow on port 53 (NodeLocal DNSCache, say).
	ExtraDNS []netip.Prefix
	// SnapshotRecheck is how often a SandboxSnapshot being taken reads its
	// VolumeSnapshots unwoken (default: snapshot.WatchRecheck when they are
	// watched, snapshot.PollRecheck when they are not).
	SnapshotRecheck time.Duration
	// AgentCANamespace is where the bridge CA's Secret is kept
	// (agentconn.OwnNamespace when empty).
	AgentCANamespace string
	// SnapshotNoWatch never watches VolumeSnapshots (poll only), as on a
	// cluster without the CSI snapshot CRDs.
	SnapshotNoWatch bool
}

// NewScheme is the scheme of the manager (scheme.New).
func NewScheme() (*runtime.Scheme, error) { return scheme.New() }

// CacheOptions narrow the informers of children to sandpod's own objects, so
// the controller never caches every pod of the cluster, and trim what is
// cached to what the reconcilers read (core/lowmem/cachetrim.go), the sandboxes' pod
// templates shared (core/lowmem/sharedtemplate.go). Secrets are never cached
// (ClientOptions).
func CacheOptions() cache.Options {
	own, _ := labels.NewRequirement(v1alpha1.LabelSandbox, selection.Exists, nil)
	children := cache.ByObject{Label: labels.NewSelector().Add(*own)}
	pods := children
	pods.Transform = lowmem.PodTransform
	return cache.Options{DefaultTransform: lowmem.DefaultTransform, ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   pods,
		&corev1.Service{}:               children,
		&corev1.PersistentVolumeClaim{}: children,
		&networkingv1.NetworkPolicy{}:   {Label: labels.SelectorFromSet(labels.Set{v1alpha1.LabelAppName: v1alpha1.AppName})},
	}}
}

// ClientOptions make the manager's client read Secrets from the API server,
// one by one, and never through an informer: the controller may only get and
// create Secrets in its own namespace (the bridge CA, core/agentconn/kubeca.EnsureCA)
// and never list or watch them.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}

// Setup registers indexes, metrics and the five controllers with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	if err := o.RuntimeClass.Validate(); err != nil {
		return err
	}
	if o.AgentImage == "" {
		o.AgentImage = DefaultAgentImage
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.PoolBatch <= 0 {
		o.PoolBatch = 16
	}
	if o.PoolRefillDelay == 0 {
		o.PoolRefillDelay = time.Second
	}
	var pacer *warmpool.Pacer
	if o.PoolRefillDelay > 0 {
		pacer = warmpool.NewPacer(o.PoolRefillDelay)
	}
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	metrics.Register(mgr.GetCache())
	c := mgr.GetClient()
	// Secrets are read past the cache (ClientOptions), so this works before
	// the manager starts. Every replica does it, leader or not: it is one
	// read, and a follower that becomes leader needs the pin at once.
	caPin, caKey, err := kubeca.EnsureCA(ctx, c, agentconn.OwnNamespace(o.AgentCANamespace), o.Clock)
	if err != nil {
		return err
	}

	sbr := &sandbox.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Clock: o.Clock, Recorder: mgr.GetEventRecorder("sandpod-sandbox"),
		ClusterDomain: o.ClusterDomain, KeepManagedFields: o.KeepManagedFields,
		Pod: sandbox.PodConfig{AgentImage: o.AgentImage, AgentDelivery: o.AgentDelivery, RuntimeClass: o.RuntimeClass, BridgeCAPin: caPin, BridgeCAKey: caKey}}
	if err := ctrl.NewControllerManagedBy(mgr).Named("sandbox").
		For(&v1alpha1.Sandbox{}, sandboxChanged).
		// Its pod, Service and PVCs (as Owns would, without the REST
		// mapper's garbage per event: controlledBy).
		Watches(&corev1.Pod{}, controlledBy("Sandbox")).
		Watches(&corev1.Service{}, controlledBy("Sandbox")).
		Watches(&corev1.PersistentVolumeClaim{}, controlledBy("Sandbox")).
		// Sandboxes made from a snapshot wait for it to be taken.
		Watches(&v1alpha1.SandboxSnapshot{}, handler.EnqueueRequestsFromMapFunc(sandboxesOfSnapshot(c))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(counted("sandbox", sbr)); err != nil {
		return err
	}

	snr := &snapshot.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Clock: o.Clock, Recheck: o.SnapshotRecheck}
	snb := ctrl.NewControllerManagedBy(mgr).Named("sandboxsnapshot").
		For(&v1alpha1.SandboxSnapshot{}).
		// Its users: the last one going lets a deleted snapshot go.
		Watches(&v1alpha1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(snapshotOfObject), sandboxChanged).
		Watches(&v1alpha1.SandboxWarmPool{}, handler.EnqueueRequestsFromMapFunc(snapshotOfObject))
	if watchVolumeSnapshots(ctx, mgr, o) {
		snb = snapshot.WatchVolumeSnapshots(snb)
		if snr.Recheck <= 0 {
			snr.Recheck = snapshot.WatchRecheck
		}
	}
	if err := snb.WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(counted("sandboxsnapshot", snr)); err != nil {
		return err
	}

	tr := &template.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Clock: o.Clock, ExtraDNS: o.ExtraDNS}
	if err := ctrl.NewControllerManagedBy(mgr).Named("sandboxtemplate").
		For(&v1alpha1.SandboxTemplate{}).
		Watches(&networkingv1.NetworkPolicy{}, controlledBy("SandboxTemplate")).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(counted("sandboxtemplate", tr)); err != nil {
		return err
	}

	pr := &warmpool.Reconciler{Client: c, Clock: o.Clock, Expectations: warmpool.NewExpectations(time.Minute), Pacer: pacer, MaxBatch: o.PoolBatch, Cache: mgr.GetCache()}
	if err := ctrl.NewControllerManagedBy(mgr).Named("sandboxwarmpool").
		For(&v1alpha1.SandboxWarmPool{}).
		// Members: by owner while in the pool, and by pool label so the pool
		// sees a member leave when a claim adopts it.
		Watches(&v1alpha1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(poolOfSandbox), sandboxChanged).
		Watches(&v1alpha1.SandboxTemplate{}, handler.EnqueueRequestsFromMapFunc(poolsOfTemplate(c))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(counted("sandboxwarmpool", pr)); err != nil {
		return err
	}

	written := readyourwrites.NewObserved[*v1alpha1.Sandbox](0)
	cr := &claim.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Clock: o.Clock, Recorder: mgr.GetEventRecorder("sandpod-claim"),
		Taken: claim.NewTaken(written), Members: adopt.NewIndex()}
	if err := watchMembers(ctx, mgr.GetCache(), cr.Members, written); err != nil {
		return err
	}
	if err := observeWrites(ctx, mgr.GetCache(), sbr, cr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("sandboxclaim").
		For(&v1alpha1.SandboxClaim{}).
		Watches(&v1alpha1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(claimOfSandbox), sandboxChanged).
		// Claims waiting for their snapshot (made later, or fixed).
		Watches(&v1alpha1.SandboxSnapshot{}, handler.EnqueueRequestsFromMapFunc(unboundClaimsOfSnapshot(c))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4 * o.Workers}).
		Complete(counted("sandboxclaim", cr))
}

// watchVolumeSnapshots says whether the snapshot controller watches
// VolumeSnapshots: only when the cluster serves them as the controller
// starts (a CRD installed later is used, but polled, until a restart). It
// logs which, so a slow snapshot on a cluster without the CRDs at start is
// explained.
func watchVolumeSnapshots(ctx context.Context, mgr ctrl.Manager, o Options) bool {
	lg := ctrl.LoggerFrom(ctx).WithName("sandboxsnapshot")
	if o.SnapshotNoWatch {
		lg.Info("VolumeSnapshots are polled, not watched (disabled)", "recheck", recheckOr(o.SnapshotRecheck, snapshot.PollRecheck).String())
		return false
	}
	served, err := snapshot.VolumeSnapshotServed(mgr.GetRESTMapper())
	if !served {
		lg.Info("the CSI snapshot API (snapshot.storage.k8s.io/v1 VolumeSnapshot) is not served: VolumeSnapshots are polled, not watched",
			"recheck", recheckOr(o.SnapshotRecheck, snapshot.PollRecheck).String(), "error", fmt.Sprint(err))
		return false
	}
	lg.Info("VolumeSnapshots are watched", "safetyRecheck", recheckOr(o.SnapshotRecheck, snapshot.WatchRecheck).String())
	return true
}

func recheckOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// poolOfSandbox maps a sandbox to its pool, by pool label and by owner. An
// update event maps both the old and the new object, so a pool hears of a
// member a claim just adopted (whose new object has neither).
func poolOfSandbox(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	if p, ok := o.GetLabels()[v1alpha1.LabelPool]; ok {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: p}})
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "SandboxWarmPool" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}})
		}
	}
	return out
}

// snapshotOfObject maps a sandbox or a pool to the snapshot it names.
func snapshotOfObject(_ context.Context, o client.Object) []reconcile.Request {
	name := ""
	switch x := o.(type) {
	case *v1alpha1.Sandbox:
		if x.Spec.SnapshotRef != nil {
			name = x.Spec.SnapshotRef.Name
		}
	case *v1alpha1.SandboxWarmPool:
		name = x.Spec.Snapshot
	}
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

func sandboxesOfSnapshot(c client.Client) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var sbs v1alpha1.SandboxList
		if err := c.List(ctx, &sbs, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.SandboxSnapshot: o.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(sbs.Items))
		for i := range sbs.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sbs.Items[i])})
		}
		return out
	}
}

// unboundClaimsOfSnapshot maps a snapshot to the claims from it that hold
// no sandbox yet: a bound claim no longer depends on it.
func unboundClaimsOfSnapshot(c client.Client) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var claims v1alpha1.SandboxClaimList
		if err := c.List(ctx, &claims, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.ClaimSnapshot: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range claims.Items {
			if claims.Items[i].Status.SandboxName == "" {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
			}
		}
		return out
	}
}

func claimOfSandbox(_ context.Context, o client.Object) []reconcile.Request {
	if c, ok := o.GetLabels()[v1alpha1.LabelClaim]; ok {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: c}}}
	}
	return nil
}

func poolsOfTemplate(c client.Client) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var pools v1alpha1.SandboxWarmPoolList
		if err := c.List(ctx, &pools, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.PoolTemplate: o.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(pools.Items))
		for i := range pools.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pools.Items[i])})
		}
		return out
	}
}

// counted counts failed passes in sandpod_reconcile_errors_total.
func counted(name string, r reconcile.Reconciler) reconcile.Reconciler {
	metrics.ReconcileErrors.WithLabelValues(name) // export 0 from the start
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			metrics.ReconcileErrors.WithLabelValues(name).Inc()
		}
		return res, err
	})
}
