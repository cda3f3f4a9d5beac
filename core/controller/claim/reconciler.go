// Package claim reconciles SandboxClaims: adopt a ready warm member in one
// optimistic write, or create a sandbox cold; release it when the claim goes.
package claim

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/index"
	"github.com/sandpod/sandpod/core/controller/metrics"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/core/patch"
)

// Reconciler binds claims to sandboxes. Reads come from the informer cache
// through field indexes; the only list-free live read is a Get that confirms
// a bound sandbox is really gone.
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Clock     clock.Clock
	Recorder  events.EventRecorder
	// Taken spreads concurrent claims over the pool (see adopt.Taken).
	Taken *adopt.Taken

	mu    sync.Mutex
	state map[types.NamespacedName]*claimMemo
}

// claimMemo is what this process remembers of a claim between passes: its
// binding (so a stale cache never makes it adopt twice) and when it was first
// seen (for the latency metric).
type claimMemo struct {
	uid       types.UID
	sandbox   string
	warm      bool
	firstSeen time.Time
	observed  bool
	written   *v1alpha1.SandboxClaimStatus // last status this process wrote
}

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxclaims/status,verbs=get;patch

// Reconcile runs one pass: fetch (or release), bind, status, TTL.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &v1alpha1.SandboxClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return reconcile.Result{}, r.release(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if c.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	now := r.Clock.Now()
	memo := r.memo(c, now)
	if memo.written != nil && c.Status.SandboxName == "" && memo.written.SandboxName != "" {
		// The cache has not seen our last status write yet: build on it.
		c = c.DeepCopy()
		c.Status = *memo.written.DeepCopy()
	}

	view, err := r.bind(ctx, c, memo, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	st := ComputeStatus(c, view)
	if due, _ := TTLDue(c, st, now); due {
		err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID})
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	_, ttlWait := TTLDue(c, st, now)

	becameReady := !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady) &&
		meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady)
	if err := r.writeStatus(ctx, c, st); err != nil {
		return reconcile.Result{}, err
	}
	if view.Adopted {
		mode := modeOf(view.Warm)
		metrics.Claims.WithLabelValues(mode).Inc()
		if r.Recorder != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, reasonOf(view.Warm), "Bind", "bound sandbox %s", view.Name)
		}
	}
	if becameReady {
		r.observeLatency(req.NamespacedName, r.Clock.Now())
	}
	return reconcile.Result{RequeueAfter: ttlWait}, nil
}

// bind finds the claim's sandbox, or adopts or creates one.
func (r *Reconciler) bind(ctx context.Context, c *v1alpha1.SandboxClaim, memo claimMemo, now time.Time) (claimView, error) {
	v := claimView{Now: now, Warm: memo.warm}
	name := c.Status.SandboxName
	if name == "" {
		name = memo.sandbox
	}
	if name == "" {
		var err error
		if name, err = r.findBound(ctx, c); err != nil {
			return v, err
		}
	}
	if name != "" {
		sb, err := r.getSandbox(ctx, c.Namespace, name)
		if err != nil {
			return v, err
		}
		v.Name, v.Sandbox, v.Gone = name, sb, sb == nil
		if memo.sandbox == "" {
			r.remember(c, name, memo.warm)
		}
		return v, nil
	}

	tmpl := &v1alpha1.SandboxTemplate{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.TemplateRef.Name}, tmpl); err != nil {
		if apierrors.IsNotFound(err) {
			v.Problem, v.PReason = "template "+c.Spec.TemplateRef.Name+" not found", v1alpha1.ReasonTemplateNotFound
			return v, nil
		}
		return v, err
	}
	sb, err := r.adopt(ctx, c, tmpl, now)
	if err != nil {
		return v, err
	}
	v.Warm = sb != nil
	if sb == nil {
		if sb, err = r.createCold(ctx, c, tmpl, now); err != nil {
			return v, err
		}
	}
	r.remember(c, sb.Name, v.Warm)
	v.Name, v.Sandbox, v.Adopted = sb.Name, sb, true
	return v, nil
}

// findBound looks for a sandbox already bound to this claim (a pass whose
// status write was lost).
func (r *Reconciler) findBound(ctx context.Context, c *v1alpha1.SandboxClaim) (string, error) {
	var list v1alpha1.SandboxList
	if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingFields{index.SandboxClaim: c.Name}); err != nil {
		return "", err
	}
	for i := range list.Items {
		if IsBoundTo(&list.Items[i], c) {
			return list.Items[i].Name, nil
		}
	}
	return "", nil
}

// getSandbox reads a bound sandbox from the cache, confirming a miss with a
// live read (a just-created sandbox may not be in the cache yet).
func (r *Reconciler) getSandbox(ctx context.Context, ns, name string) (*v1alpha1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// adopt takes the best ready member of the template's pools (adopt.Adoption:
// one guarded write per member, the next one on a conflict), or returns nil
// when none is ready.
func (r *Reconciler) adopt(ctx context.Context, c *v1alpha1.SandboxClaim, tmpl *v1alpha1.SandboxTemplate, now time.Time) (*v1alpha1.Sandbox, error) {
	var pools v1alpha1.SandboxWarmPoolList
	if err := r.Client.List(ctx, &pools, client.InNamespace(c.Namespace), client.MatchingFields{index.PoolTemplate: tmpl.Name}); err != nil {
		return nil, err
	}
	var members []*v1alpha1.Sandbox
	for i := range pools.Items {
		pool := &pools.Items[i]
		if pool.Spec.Snapshot != "" {
			continue // a pool of forks serves claims from its snapshot (the bridge's), not a claim of the template
		}
		var list v1alpha1.SandboxList
		// Read-only views of the cache's members (no deep copy of a whole
		// pool per claim); adopt.TakeWrite copies what it changes.
		if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingFields{index.SandboxPool: pool.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for j := range list.Items {
			if sb := &list.Items[j]; adopt.IsMember(sb, pool.Name) {
				members = append(members, sb)
			}
		}
	}
	sb, name, err := adopt.Adoption{
		Writer: r.Client,
		Taken:  r.Taken,
		Next:   adopt.Candidates(members, lifecycle.TemplateHash(tmpl.Spec)),
		Apply:  func(sb *v1alpha1.Sandbox) { Bind(sb, c, tmpl, now) },
		Refused: func(name string, err error) {
			log.FromContext(ctx).V(1).Info("adopt conflict", "member", name, "err", err.Error())
		},
	}.Run(ctx, c.Namespace)
	if err != nil {
		return nil, fmt.Errorf("adopt %s: %w", name, err)
	}
	return sb, nil
}

// createCold creates the claim's own sandbox, named after the claim.
func (r *Reconciler) createCold(ctx context.Context, c *v1alpha1.SandboxClaim, tmpl *v1alpha1.SandboxTemplate, now time.Time) (*v1alpha1.Sandbox, error) {
	sb := ColdSandbox(c, tmpl, now)
	err := r.Client.Create(ctx, sb)
	if err == nil {
		return sb, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	existing := &v1alpha1.Sandbox{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sb), existing); err != nil {
		return nil, err
	}
	if IsBoundTo(existing, c) {
		return existing, nil
	}
	// The name is taken by someone else's sandbox: take a generated one.
	sb = ColdSandbox(c, tmpl, now)
	sb.Name, sb.GenerateName = "", c.Name+"-"
	if err := r.Client.Create(ctx, sb); err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	return sb, nil
}

// release deletes the sandboxes a deleted claim held. Owner references make
// the garbage collector do the same on a full cluster; doing it here makes
// release prompt.
func (r *Reconciler) release(ctx context.Context, key types.NamespacedName) error {
	var list v1alpha1.SandboxList
	if err := r.Client.List(ctx, &list, client.InNamespace(key.Namespace), client.MatchingFields{index.SandboxClaim: key.Name}); err != nil {
		return err
	}
	for i := range list.Items {
		sb := &list.Items[i]
		if sb.DeletionTimestamp != nil || !controlledByClaimNamed(sb, key.Name) {
			continue
		}
		err := r.Client.Delete(ctx, sb, client.Preconditions{UID: &sb.UID}, client.PropagationPolicy("Background"))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("release %s: %w", sb.Name, err)
		}
	}
	return nil
}

func controlledByClaimNamed(sb *v1alpha1.Sandbox, name string) bool {
	for _, ref := range sb.OwnerReferences {
		if ref.Kind == "SandboxClaim" && ref.Name == name && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// writeStatus patches the status when it changed. It also skips a status
// this process already wrote, which a cache that has not caught up with that
// write would otherwise make it write twice.
func (r *Reconciler) writeStatus(ctx context.Context, c *v1alpha1.SandboxClaim, st v1alpha1.SandboxClaimStatus) error {
	if equality.Semantic.DeepEqual(c.Status, st) {
		return nil
	}
	key := client.ObjectKeyFromObject(c)
	r.mu.Lock()
	m := r.state[key]
	written := m != nil && m.uid == c.UID && m.written != nil && equality.Semantic.DeepEqual(*m.written, st)
	r.mu.Unlock()
	if written {
		return nil
	}
	p, err := patch.Status(c.Status, st)
	if err != nil {
		return err
	}
	c.Status = st
	if err := r.Client.Status().Patch(ctx, c, p); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.mu.Lock()
	if m := r.state[key]; m != nil && m.uid == c.UID {
		cp := st.DeepCopy()
		m.written = cp
	}
	r.mu.Unlock()
	return nil
}

func (r *Reconciler) memo(c *v1alpha1.SandboxClaim, now time.Time) claimMemo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		r.state = map[types.NamespacedName]*claimMemo{}
	}
	key := client.ObjectKeyFromObject(c)
	m := r.state[key]
	if m == nil || m.uid != c.UID {
		m = &claimMemo{uid: c.UID, firstSeen: now, warm: c.Status.Warm}
		r.state[key] = m
	}
	return *m
}

func (r *Reconciler) remember(c *v1alpha1.SandboxClaim, sandbox string, warm bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.state[client.ObjectKeyFromObject(c)]; m != nil && m.uid == c.UID {
		m.sandbox, m.warm = sandbox, warm
	}
}

func (r *Reconciler) observeLatency(key types.NamespacedName, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.state[key]; m != nil && !m.observed && m.sandbox != "" {
		m.observed = true
		metrics.ClaimLatency.WithLabelValues(modeOf(m.warm)).Observe(now.Sub(m.firstSeen).Seconds())
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.state, key)
}

func modeOf(warm bool) string {
	if warm {
		return "warm"
	}
	return "cold"
}

func reasonOf(warm bool) string {
	if warm {
		return v1alpha1.ReasonWarmAdopted
	}
	return v1alpha1.ReasonColdCreated
}
