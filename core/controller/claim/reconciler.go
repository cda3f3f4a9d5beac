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
	"github.com/sandpod/sandpod/core/readyourwrites"
)

// Reconciler binds claims to sandboxes. Reads come from the informer cache
// through field indexes; the only list-free live read is a Get that confirms
// a bound sandbox is really gone.
//
// What a pass wrote is read back by the next one even when the cache has not
// caught up with it (readyourwrites): the sandbox it adopted or created (so
// a claim whose status write was lost or is not in the cache yet never
// adopts a second member) and the claim status it wrote (so it is not
// written again).
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Clock     clock.Clock
	Recorder  events.EventRecorder
	// Taken spreads concurrent claims over the pool (see adopt.Taken). Its
	// store (Taken.Written) also holds the sandboxes this reconciler
	// created, so all its sandbox writes are read back from one place.
	Taken *adopt.Taken
	// Members are the free pool members, kept from the Sandbox informer's
	// events (adopt.Index); the same events must tell Taken's store
	// (readyourwrites.NewObserved) what the cache shows, after the index.
	Members *adopt.Index

	mu     sync.Mutex
	state  map[types.NamespacedName]*claimMemo
	claims *readyourwrites.Store[*v1alpha1.SandboxClaim] // status writes
}

// claimMemo is what this process remembers of a claim for the latency
// metric: when it was first seen, and whether it was bound and warm.
type claimMemo struct {
	uid       types.UID
	bound     bool
	warm      bool
	firstSeen time.Time
	observed  bool
	// uncertain is the member an adoption was written to when the write
	// failed without telling whether it was applied (adopt.Uncertain).
	uncertain string
}

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxclaims/status,verbs=get;patch

// Reconcile runs one pass: fetch (or release), bind, status, TTL.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	tr := tracePass(ctx)
	c := &v1alpha1.SandboxClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return reconcile.Result{}, r.release(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	// The cache may not show our last status write yet: build on it.
	c = r.claimWrites().Get(c.Namespace, c.Name, c)
	if c.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	now := r.Clock.Now()
	memo := r.memo(c, now)

	tr.mark("read")
	view, err := r.bind(ctx, c, memo, now, tr)
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
	tr.mark("status")
	defer tr.done(view)
	if view.Adopted {
		mode := modeOf(view.Warm)
		metrics.Claims.WithLabelValues(mode).Inc()
		// A warm bind has no event: the claim's status already says it
		// (sandboxName, warm), and an event is one more API write per claim
		// in a burst (the bridge's claims have none either). A cold create
		// keeps its event: it is rare and slow, and worth a line in
		// `kubectl describe`.
		if r.Recorder != nil && !view.Warm {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, v1alpha1.ReasonColdCreated, "Bind", "bound sandbox %s", view.Name)
		}
	}
	if becameReady {
		r.observeLatency(req.NamespacedName, r.Clock.Now())
	}
	return reconcile.Result{RequeueAfter: lifecycle.NextWakeup(ttlWait, view.Retry)}, nil
}

// bind finds the claim's sandbox, or adopts or creates one.
func (r *Reconciler) bind(ctx context.Context, c *v1alpha1.SandboxClaim, memo claimMemo, now time.Time, tr *passTrace) (claimView, error) {
	v := claimView{Now: now, Warm: memo.warm}
	name := c.Status.SandboxName
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
		if !memo.bound {
			r.remember(c, memo.warm)
		}
		return v, nil
	}

	if memo.uncertain != "" {
		sb, err := r.uncertainAdoption(ctx, c, memo.uncertain)
		if err != nil {
			return v, err
		}
		if sb != nil {
			r.remember(c, true)
			v.Name, v.Sandbox, v.Adopted, v.Warm = sb.Name, sb, true, true
			return v, nil
		}
	}

	// From a snapshot: the bridge's decision (lifecycle.SnapshotSource),
	// before the template, as the bridge takes it.
	if no, err := r.snapshotSource(ctx, c); err != nil || no != nil {
		if no != nil {
			v.Problem, v.PReason = no.Message, snapshotReason(no.Why)
		}
		return v, err
	}
	tmpl := &v1alpha1.SandboxTemplate{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.TemplateRef.Name}, tmpl); err != nil {
		if apierrors.IsNotFound(err) {
			v.Problem, v.PReason = "template "+c.Spec.TemplateRef.Name+" not found", v1alpha1.ReasonTemplateNotFound
			return v, nil
		}
		return v, err
	}
	if snap := c.Spec.SnapshotName(); snap != "" {
		if no := lifecycle.SnapshotVolumes(snap, tmpl.Name, &tmpl.Spec); no != nil {
			v.Problem, v.PReason = no.Message, snapshotReason(no.Why)
			return v, nil
		}
	}
	// Over a SandboxQuota the claim waits, its Ready condition naming the
	// limit (reason QuotaExceeded), and looks again later.
	tr.mark("template")
	no, wait, err := r.checkQuota(ctx, c, tmpl, now)
	if err != nil {
		return v, err
	}
	if no != nil {
		v.Problem, v.PReason, v.Retry = no.Message(c.Namespace, tmpl.Name), v1alpha1.ReasonQuotaExceeded, wait
		return v, nil
	}
	tr.mark("quota")
	sb, err := r.adopt(ctx, c, tmpl, now, tr)
	if err != nil {
		return v, err
	}
	tr.mark("adopt")
	v.Warm = sb != nil
	if sb == nil {
		if sb, err = r.createCold(ctx, c, tmpl, now); err != nil {
			return v, err
		}
	}
	r.remember(c, v.Warm)
	v.Name, v.Sandbox, v.Adopted = sb.Name, sb, true
	return v, nil
}

// findBound looks for a sandbox already bound to this claim: one a pass
// adopted or created when its status write was lost or is not in the cache
// yet (the sandbox may not be in the cache either: then it is in written()).
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
	if w := r.written().Pending(c.Namespace, func(sb *v1alpha1.Sandbox) bool { return IsBoundTo(sb, c) }); len(w) > 0 {
		return w[0].Name, nil
	}
	return "", nil
}

// getSandbox reads a bound sandbox from the cache, or what this process
// wrote to it when the cache holds an older version. A miss is confirmed
// with a live read, not answered from what this process wrote: the sandbox
// may be new (not in the cache yet) or deleted since (gone from it).
func (r *Reconciler) getSandbox(ctx context.Context, ns, name string) (*v1alpha1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
	if err == nil {
		return r.written().Get(ns, name, sb), nil
	}
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

// adopt takes the best ready member of the template (adopt.Adoption: one
// guarded write per member, the next one on a conflict), or returns nil
// when none is ready. Members come from the index the informer's events
// keep (Members), as in the bridge, not from a list of the cache per claim.
func (r *Reconciler) adopt(ctx context.Context, c *v1alpha1.SandboxClaim, tmpl *v1alpha1.SandboxTemplate, now time.Time, tr *passTrace) (*v1alpha1.Sandbox, error) {
	snapshot := c.Spec.SnapshotName()
	hash := lifecycle.PoolHash(lifecycle.TemplateHash(tmpl.Spec), snapshot)
	sb, name, err := adopt.Adoption{
		Writer: tr.writer(r.Client),
		Taken:  r.Taken,
		Next: func(skip func(string) bool) (*v1alpha1.Sandbox, bool) {
			return r.Members.Pick(c.Namespace, tmpl.Name, snapshot, hash, skip)
		},
		Apply: func(sb *v1alpha1.Sandbox) { Bind(sb, c, tmpl, now) },
		Refused: func(name string, err error) {
			log.FromContext(ctx).V(1).Info("adopt conflict", "member", name, "err", err.Error())
		},
	}.Run(ctx, c.Namespace)
	if err != nil {
		if adopt.Uncertain(err) {
			r.setUncertain(c, name)
		}
		return nil, fmt.Errorf("adopt %s: %w", name, err)
	}
	return sb, nil
}

// uncertainAdoption reads from the API server the member a previous pass
// wrote an adoption to without learning whether it was applied: the cache
// may not show that write yet (a restarted kube-apiserver), and taking
// another member would bind the claim twice. It returns the member when the
// adoption landed, nil when it did not.
func (r *Reconciler) uncertainAdoption(ctx context.Context, c *v1alpha1.SandboxClaim, name string) (*v1alpha1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, sb)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	r.setUncertain(c, "")
	if err != nil || sb.DeletionTimestamp != nil || !IsBoundTo(sb, c) {
		return nil, nil
	}
	return sb, nil
}

func (r *Reconciler) setUncertain(c *v1alpha1.SandboxClaim, member string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.state[client.ObjectKeyFromObject(c)]; m != nil && m.uid == c.UID {
		m.uncertain = member
	}
}

// createCold creates the claim's own sandbox, named after the claim.
func (r *Reconciler) createCold(ctx context.Context, c *v1alpha1.SandboxClaim, tmpl *v1alpha1.SandboxTemplate, now time.Time) (*v1alpha1.Sandbox, error) {
	sb := ColdSandbox(c, tmpl, now)
	err := r.Client.Create(ctx, sb)
	if err == nil {
		r.written().Put(cachedForm(sb))
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
	r.written().Put(cachedForm(sb))
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

// writeStatus patches the status when it changed. The write is kept
// (claimWrites), so that a pass reading a cache that has not caught up with
// it computes from it and does not write it twice.
func (r *Reconciler) writeStatus(ctx context.Context, c *v1alpha1.SandboxClaim, st v1alpha1.SandboxClaimStatus) error {
	if equality.Semantic.DeepEqual(c.Status, st) {
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
	w := c.DeepCopy()
	w.ManagedFields = nil
	r.claimWrites().Put(w)
	return nil
}

// cachedForm is a copy of sb without managedFields, as the cache keeps it:
// what the store of this reconciler's writes holds (adopt.Taken.Keep too).
func cachedForm(sb *v1alpha1.Sandbox) *v1alpha1.Sandbox {
	c := *sb
	c.ManagedFields = nil
	return c.DeepCopy()
}

// ObserveClaim is told of every event of the claim informer (Setup; the
// sandbox informer's events reach Taken's store through watchMembers): a
// claim status write the cache now shows leaves its store at once, instead
// of when a pass reads that claim again (a claim once Ready is not
// reconciled again, so its status answer stayed a minute or more).
func (r *Reconciler) ObserveClaim(c *v1alpha1.SandboxClaim, deleted bool) {
	r.claimWrites().Observe(c, deleted)
}

// NewTaken is the claim reconciler's adopt.Taken over written (nil: a
// store of its own): takes kept without managedFields, as the cache keeps
// sandboxes.
func NewTaken(written *readyourwrites.Store[*v1alpha1.Sandbox]) *adopt.Taken {
	t := adopt.NewTaken(written)
	t.Keep = cachedForm
	return t
}

// written is the store of sandboxes this process adopted or created.
func (r *Reconciler) written() *readyourwrites.Store[*v1alpha1.Sandbox] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Taken == nil {
		r.Taken = NewTaken(nil)
	}
	return r.Taken.Written()
}

func (r *Reconciler) claimWrites() *readyourwrites.Store[*v1alpha1.SandboxClaim] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.claims == nil {
		r.claims = readyourwrites.New[*v1alpha1.SandboxClaim](0)
	}
	return r.claims
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

func (r *Reconciler) remember(c *v1alpha1.SandboxClaim, warm bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.state[client.ObjectKeyFromObject(c)]; m != nil && m.uid == c.UID {
		m.bound, m.warm = true, warm
	}
}

func (r *Reconciler) observeLatency(key types.NamespacedName, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.state[key]; m != nil && !m.observed && m.bound {
		m.observed = true
		metrics.ClaimLatency.WithLabelValues(modeOf(m.warm)).Observe(now.Sub(m.firstSeen).Seconds())
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.claimWrites().Forget(key.Namespace, key.Name)
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
