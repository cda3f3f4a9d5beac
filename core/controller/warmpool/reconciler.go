// Package warmpool reconciles SandboxWarmPools: N ready, unclaimed sandboxes
// of a template, refilled in paced batches and rolled on template change.
package warmpool

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/index"
	"github.com/sandpod/sandpod/core/controller/metrics"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/core/patch"
)

// Reconciler keeps each pool at its size.
type Reconciler struct {
	Client       client.Client
	Clock        clock.Clock
	Expectations *Expectations
	// Pacer batches refills behind bursts of claims (nil: refill at once).
	Pacer *Pacer
	// MaxBatch caps the members created per pass (0: no cap).
	MaxBatch int
	// Cache, when set, is the manager's cache: members are read from its
	// index without a List's copy of each (index.Sandboxes).
	Cache cache.Informers
}

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxwarmpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxwarmpools/status,verbs=get;patch

// Reconcile runs one pass: fetch pool and template, observe members, plan,
// delete and create, status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &v1alpha1.SandboxWarmPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			r.Expectations.Forget(req.String())
			if r.Pacer != nil {
				r.Pacer.Done(req.String())
			}
			forgetMetrics(req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pool.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	now := r.Clock.Now()
	members, err := r.members(ctx, pool)
	if err != nil {
		return reconcile.Result{}, err
	}

	tmpl := &v1alpha1.SandboxTemplate{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: pool.Spec.TemplateRef.Name}, tmpl); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.writeStatus(ctx, pool, members, now, metav1.ConditionFalse, v1alpha1.ReasonTemplateNotFound,
			"template "+pool.Spec.TemplateRef.Name+" not found")
	}
	hash := lifecycle.PoolHash(lifecycle.TemplateHash(tmpl.Spec), pool.Spec.Snapshot)

	byName := map[string]*v1alpha1.Sandbox{}
	views := make([]lifecycle.PoolMember, 0, len(members))
	for _, m := range members {
		byName[m.Name] = m
		views = append(views, adopt.ToPoolMember(m))
	}
	inFlight, expiresIn := r.Expectations.InFlight(req.String(), func(n string) bool { _, ok := byName[n]; return ok }, now)
	plan := lifecycle.PlanPool(int(pool.Spec.Replicas), views, hash, inFlight, r.MaxBatch)
	var paceWait time.Duration
	if r.Pacer != nil {
		// Refills yield to claims: held back while claims keep taking
		// members, and paused again when they come back mid-refill
		// (Pacer), so claims meet a quiet API server.
		if plan.Create == 0 {
			r.Pacer.Done(req.String())
		} else if due, wait := r.Pacer.Due(req.String(), now, len(members)+inFlight, int(pool.Spec.Replicas)); !due {
			plan.Create, paceWait = 0, wait
		}
	}

	for _, name := range plan.Delete {
		m := byName[name]
		// The resourceVersion precondition makes a delete lose against a
		// claim that adopted the member meanwhile.
		err := r.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID, ResourceVersion: &m.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return reconcile.Result{}, fmt.Errorf("delete member %s: %w", name, err)
		}
	}
	for i := 0; i < plan.Create; i++ {
		sb := adopt.NewMember(pool, tmpl, hash)
		if err := r.Client.Create(ctx, sb); err != nil {
			return reconcile.Result{}, fmt.Errorf("create member: %w", err)
		}
		r.Expectations.Expect(req.String(), sb.Name, now)
		if r.Pacer != nil {
			r.Pacer.Created(req.String(), 1) // not a claim's doing, next pass
		}
	}

	reason, msg, ok := v1alpha1.ReasonReconciled, "", true
	if ready := countReady(views, hash); ready < int(pool.Spec.Replicas) {
		reason, msg, ok = v1alpha1.ReasonPoolFilling, fmt.Sprintf("%d of %d members ready", ready, pool.Spec.Replicas), false
	}
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	if err := r.writeStatus(ctx, pool, members, now, status, reason, msg); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: lifecycle.NextWakeup(expiresIn, paceWait)}, nil
}

func (r *Reconciler) members(ctx context.Context, pool *v1alpha1.SandboxWarmPool) ([]*v1alpha1.Sandbox, error) {
	// Read-only views of the cache's members, no copy of the whole pool
	// per pass: a pass only reads them (and deletes by UID and version).
	list, err := index.Sandboxes(ctx, r.Cache, r.Client, pool.Namespace, index.SandboxPool, pool.Name)
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.Sandbox, 0, len(list))
	for _, sb := range list {
		if adopt.IsMember(sb, pool.Name) && metav1.IsControlledBy(sb, pool) {
			out = append(out, sb)
		}
	}
	return out, nil
}

func countReady(ms []lifecycle.PoolMember, hash string) int {
	n := 0
	for _, m := range ms {
		if m.Ready && m.TemplateHash == hash {
			n++
		}
	}
	return n
}

func (r *Reconciler) writeStatus(ctx context.Context, pool *v1alpha1.SandboxWarmPool, members []*v1alpha1.Sandbox, now time.Time,
	ready metav1.ConditionStatus, reason, msg string) error {
	st := *pool.Status.DeepCopy()
	st.Replicas, st.ReadyReplicas = int32(len(members)), 0
	for _, m := range members {
		if m.Status.Phase == v1alpha1.SandboxRunning {
			st.ReadyReplicas++
		}
	}
	st.Selector = Selector(pool.Name)
	st.ObservedGeneration = pool.Generation
	lifecycle.SetCondition(&st.Conditions, v1alpha1.ConditionReady, ready == metav1.ConditionTrue, reason, msg, pool.Generation, now)
	metrics.PoolReady.WithLabelValues(pool.Namespace, pool.Name).Set(float64(st.ReadyReplicas))
	metrics.PoolSize.WithLabelValues(pool.Namespace, pool.Name).Set(float64(st.Replicas))
	metrics.PoolDesired.WithLabelValues(pool.Namespace, pool.Name).Set(float64(pool.Spec.Replicas))
	if equality.Semantic.DeepEqual(st, pool.Status) {
		return nil
	}
	p, err := patch.Status(pool.Status, st)
	if err != nil {
		return err
	}
	pool.Status = st
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, pool, p))
}

func forgetMetrics(ns, name string) {
	metrics.PoolReady.DeleteLabelValues(ns, name)
	metrics.PoolSize.DeleteLabelValues(ns, name)
	metrics.PoolDesired.DeleteLabelValues(ns, name)
}
