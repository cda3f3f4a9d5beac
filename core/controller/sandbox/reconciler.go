// Package sandbox reconciles Sandboxes: one durable pod with a stable
// identity, its PVCs and headless Service. It makes no Secret: the agent
// admits the bridge by its client certificate (core/agentconn).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/core/patch"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

// Reconciler keeps each Sandbox's pod, storage and service in line
// with its spec and reports what it sees in one status write per pass.
type Reconciler struct {
	// Client reads from the cache (see controller.ClientOptions).
	Client client.Client
	// APIReader reads past the cache (which holds only labelled children) to
	// tell whose object a taken name is.
	APIReader client.Reader
	Clock     clock.Clock
	Recorder  events.EventRecorder
	Pod       PodConfig
	// KeepManagedFields leaves new pool members' managedFields as the create
	// made them (--untrack-pool-members=false): one write fewer per member,
	// for kube-apiserver tracking every later write, the claim's take
	// included (adopt.Untrack).
	KeepManagedFields bool
	// ClusterDomain is the cluster's DNS domain (status.serviceFQDN);
	// empty: cluster.local.
	ClusterDomain string

	// written holds the status writes of this process until the cache shows
	// them. A pass woken by a child (the pod or secret it just made) often
	// runs before the informer has delivered its last status write; without
	// it the pass would compute the same status against the old one and
	// send it again, a write that changes nothing (the kwok bench counted
	// half a status patch per warm claim of those).
	written readyourwrites.Store[*v1alpha1.Sandbox]
}

// Observe is told of every event of the sandbox informer (Setup): a status
// write the cache now shows leaves the store at once. Without it an entry
// (the write's whole answer) stayed until a pass read that sandbox again
// or, for a sandbox not reconciled again, until a later write swept it a
// minute or more after: thousands of answers while sandboxes are made.
func (r *Reconciler) Observe(sb *v1alpha1.Sandbox, deleted bool) { r.written.Observe(sb, deleted) }

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxes/status,verbs=get;patch
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods;services;persistentvolumeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass: fetch, expiry, idle suspend, children, pod, status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	sb, err := r.get(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.Namespace, req.Name)
			return reconcile.Result{}, r.cleanupOrphans(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if sb.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // children go with it (owner references)
	}
	now := r.Clock.Now()
	var ev eventQueue

	// 1. Expiry: Delete removes the sandbox, Retain stops it.
	// A lease its client stopped renewing (the bridge's annotation) ends
	// the sandbox as its shutdown time would.
	// Idleness comes after both (lifecycle.DecideDue, as the local engine).
	due := lifecycle.DecideDue(now, deadlines(sb))
	expiry, leaseExpired := due.Expiry, due.Lease
	if expiry == lifecycle.ExpiryDelete {
		if leaseExpired {
			log.FromContext(ctx).Info("lease expired: deleting", "sandbox", req.NamespacedName)
		}
		err := r.Client.Delete(ctx, sb, client.PropagationPolicy("Background"), client.Preconditions{UID: &sb.UID})
		return reconcile.Result{}, ignoreNotFound(err)
	}

	// 2. Idle auto-suspend: a spec change, so the user sees and can undo it.
	idleSuspended, err := r.idleSuspend(ctx, sb, due.Idle == v1alpha1.IdleSuspend)
	if err != nil {
		return reconcile.Result{}, err
	}
	if idleSuspended {
		ev.add(sb, corev1.EventTypeNormal, v1alpha1.ReasonIdle, "suspended after idle timeout")
	}

	// 3. The pod as it stands, then the children that outlive it. A child
	// the API server refuses (e.g. an invalid volume claim template) or
	// whose name is taken by someone else's object is reported, not
	// retried in a tight loop.
	pod, podErr := r.getPod(ctx, sb)
	if podErr != nil && !IsNameConflict(podErr) {
		return reconcile.Result{}, podErr
	}
	// A pod that exited 0 without restartOnFailure: suspended, not Failed.
	if completed, err := r.suspendCompleted(ctx, sb, pod, expiry); err != nil {
		return reconcile.Result{}, err
	} else if completed {
		ev.add(sb, corev1.EventTypeNormal, v1alpha1.ReasonCompleted, "pod "+pod.Name+" exited 0: suspended (resume starts it again)")
	}
	// A sandbox made from (or restored to) a snapshot: its volumes wait
	// for the snapshot, and a restore replaces pod and volumes first.
	snap, waiting, snapErr := r.snapshotOf(ctx, sb)
	if snapErr != nil && !isReported(snapErr) {
		return reconcile.Result{}, snapErr
	}
	var childErr error
	switch {
	case snapErr != nil:
		childErr = snapErr
	case waiting == "":
		if waiting, err = r.restore(ctx, sb, pod, &ev); err != nil {
			return reconcile.Result{}, err
		}
	}
	if childErr == nil && waiting == "" {
		childErr = r.ensureChildren(ctx, sb, snap)
	}
	if childErr != nil && !isReported(childErr) {
		return reconcile.Result{}, childErr
	}
	if childErr == nil {
		childErr = podErr
	}

	// 4. The pod.
	obs := lifecycle.Observed{
		Mode:     mode(sb),
		Expired:  expiry == lifecycle.ExpiryRetain,
		Workload: WorkloadOf(pod),
	}
	if waiting != "" && pod != nil {
		// Its pod is going (a restore): not ready, whatever it said last.
		obs.Workload = lifecycle.WorkloadStarting
	}
	in := statusInput{Now: now, Observed: obs, Pod: pod, IdleSuspended: idleSuspended, LeaseExpired: leaseExpired, ClusterDomain: r.ClusterDomain}
	if childErr != nil {
		in.Refused, in.RefusedReason = childErr.Error(), v1alpha1.ReasonInvalidSpec
		if IsNameConflict(childErr) {
			in.RefusedReason = v1alpha1.ReasonNameConflict
		}
		if isSnapshotUnusable(childErr) {
			in.RefusedReason = v1alpha1.ReasonSnapshotUnusable
		}
		ev.add(sb, corev1.EventTypeWarning, in.RefusedReason, childErr.Error())
	} else if waiting != "" {
		in.Waiting, in.WaitingReason = waiting, waitingReason(sb, snap)
	} else if pod, err = r.reconcilePod(ctx, sb, pod, obs, &in, &ev); err != nil {
		return reconcile.Result{}, err
	}
	in.Pod = pod

	// 5. One status write, then the events of the pass.
	if err := r.writeStatus(ctx, sb, ComputeStatus(sb, in)); err != nil {
		return reconcile.Result{}, err
	}
	ev.emit(r.Recorder)
	wake := lifecycle.NextWakeup(due.Wait, in.BackOff)
	if in.RefusedReason == v1alpha1.ReasonNameConflict || in.RefusedReason == v1alpha1.ReasonSnapshotUnusable {
		// The cache does not see the foreign object go away: look again.
		wake = lifecycle.NextWakeup(wake, conflictRecheck)
	}
	return reconcile.Result{RequeueAfter: wake}, nil
}

// get reads a sandbox from the cache, or the status this process last wrote
// to it when the cache does not show that write yet.
func (r *Reconciler) get(ctx context.Context, key types.NamespacedName) (*v1alpha1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{}
	if err := r.Client.Get(ctx, key, sb); err != nil {
		return nil, err
	}
	return r.written.Get(key.Namespace, key.Name, sb), nil
}

// conflictRecheck is how often a sandbox blocked by a foreign object looks
// whether the name is free again.
const conflictRecheck = 30 * time.Second

// isReported says whether a child error is the sandbox's to fix (reported in
// its status) rather than a transient one to retry.
func isReported(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || IsNameConflict(err)
}

func mode(sb *v1alpha1.Sandbox) v1alpha1.OperatingMode {
	if sb.Spec.OperatingMode == "" {
		return v1alpha1.OperatingModeRunning
	}
	return sb.Spec.OperatingMode
}

// deadlines are the sandbox's shutdown time, lease and idle timeout. The
// idle timeout applies to a running sandbox whose idle action is Suspend:
// Pause is the bridge's to apply (bridge/kube/idlepause.go), as a pause
// needs the sandbox's agent, which the controller does not talk to.
func deadlines(sb *v1alpha1.Sandbox) lifecycle.Deadlines {
	d := lifecycle.SandboxDeadlines(sb)
	d.IdleApplies = d.IdleTimeout > 0 && mode(sb) == v1alpha1.OperatingModeRunning &&
		d.IdleAction != v1alpha1.IdlePause && sb.Status.Phase == v1alpha1.SandboxRunning
	return d
}

// idleSuspend sets operatingMode Suspended on a sandbox due for an idle
// suspend (due), and drops the marks of an earlier idle (or completed)
// suspend from a sandbox that runs again.
func (r *Reconciler) idleSuspend(ctx context.Context, sb *v1alpha1.Sandbox, due bool) (bool, error) {
	if mode(sb) == v1alpha1.OperatingModeRunning && (sb.Annotations[v1alpha1.AnnotationIdleSuspended] != "" || sb.Annotations[v1alpha1.AnnotationCompleted] != "") {
		// Resumed after an idle (or completed) suspend: drop the marks.
		patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.AnnotationIdleSuspended + `":null,"` + v1alpha1.AnnotationCompleted + `":null}}}`)
		if err := r.Client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return false, fmt.Errorf("clear idle mark: %w", err)
		}
	}
	if !due {
		return false, nil
	}
	// The bridge's port previews of the sandbox close in the same write.
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.AnnotationIdleSuspended + `":"true","` + v1alpha1.AnnotationExposedPorts + `":null}},"spec":{"operatingMode":"Suspended"}}`)
	if err := r.Client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, fmt.Errorf("idle suspend: %w", err)
	}
	return true, nil
}

// ensureChildren creates the PVCs and service when missing. Existing
// children are left as they are: PVC specs are immutable. (The agent
// Secret of earlier controllers' sandboxes is owned by its sandbox and goes
// with it.)
func (r *Reconciler) ensureChildren(ctx context.Context, sb *v1alpha1.Sandbox, snap *v1alpha1.SandboxSnapshot) error {
	var want []client.Object
	for _, pvc := range BuildPVCs(sb, snap) {
		want = append(want, pvc)
	}
	if sb.Spec.Service {
		want = append(want, BuildService(sb))
	}
	for _, obj := range want {
		if err := r.ensureChild(ctx, sb, obj); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) getPod(ctx context.Context, sb *v1alpha1.Sandbox) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(sb), pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if isEarlierIncarnation(pod.OwnerReferences, sb) {
		// Going away: its deletion requeues this sandbox, which then
		// makes its own.
		return nil, r.deleteEarlier(ctx, pod)
	}
	if !isOwnedBy(pod.OwnerReferences, sb) {
		return nil, conflictOf(pod)
	}
	return pod, nil
}

// reconcilePod deletes the pod of a suspended, expired or failed (and
// restartable) sandbox, and creates the pod of a sandbox that should run and
// has none. It returns the pod as it now stands.
func (r *Reconciler) reconcilePod(ctx context.Context, sb *v1alpha1.Sandbox, pod *corev1.Pod, obs lifecycle.Observed, in *statusInput, ev *eventQueue) (*corev1.Pod, error) {
	run := lifecycle.ShouldRunWorkload(obs)
	switch {
	case pod != nil && run && AgentCAStale(pod, r.Pod.BridgeCAPin):
		// sandpod reinstalled after its namespace (and the CA in it) went,
		// or its CA replaced: this agent and the bridge refuse each other.
		// The workspace's volumes stay; the processes do not.
		in.Restart = v1alpha1.ReasonAgentCAChanged
		if pod.DeletionTimestamp == nil {
			if err := r.deletePod(ctx, pod); err != nil {
				return pod, fmt.Errorf("delete pod: %w", err)
			}
			ev.add(sb, corev1.EventTypeNormal, v1alpha1.ReasonAgentCAChanged, fmt.Sprintf("deleted pod %s: its agent trusts another bridge CA than this controller's (sandpod reinstalled, or its CA replaced); a new pod follows", pod.Name))
		}
		return pod, nil
	case pod != nil && run && lifecycle.ShouldRestart(obs, sb.Spec.RestartOnFailure):
		// Replaced, with a back-off between replacements so a pod that
		// fails at once is not recreated in a tight loop.
		in.Restart = v1alpha1.ReasonRestarting
		if pod.DeletionTimestamp != nil {
			return pod, nil
		}
		d := lifecycle.DecideRestart(in.Now, restartHistory(sb), pod.CreationTimestamp.Time, ranFor(pod, in.Now))
		if !d.Now {
			if d.Wait > 0 {
				in.Restart, in.BackOff = v1alpha1.ReasonRestartBackOff, d.Wait
			}
			return pod, nil
		}
		if err := r.deletePod(ctx, pod); err != nil {
			return pod, fmt.Errorf("delete pod: %w", err)
		}
		in.RestartStreak = d.Streak
		ev.add(sb, corev1.EventTypeNormal, v1alpha1.ReasonRestarting, fmt.Sprintf("deleted failed pod %s (restart %d in a row)", pod.Name, d.Streak))
		return pod, nil
	case pod != nil && !run:
		if pod.DeletionTimestamp == nil {
			if err := r.deletePod(ctx, pod); err != nil {
				return pod, fmt.Errorf("delete pod: %w", err)
			}
			ev.add(sb, corev1.EventTypeNormal, "Stopped", "deleted pod "+pod.Name)
		}
		return pod, nil
	case pod == nil && run:
		newPod, err := BuildPod(sb, r.Pod)
		if err != nil {
			in.Refused = err.Error()
			in.RefusedReason = v1alpha1.ReasonInvalidSpec
			if errors.Is(err, ErrRuntimeClassRequired) {
				in.RefusedReason = v1alpha1.ReasonRuntimeClassMissing
			}
			ev.add(sb, corev1.EventTypeWarning, in.RefusedReason, err.Error())
			return nil, nil
		}
		if err := r.Client.Create(ctx, newPod); err != nil {
			if apierrors.IsAlreadyExists(err) {
				err = r.podNameTaken(ctx, sb, newPod)
				if IsNameConflict(err) {
					in.Refused, in.RefusedReason = err.Error(), v1alpha1.ReasonNameConflict
					ev.add(sb, corev1.EventTypeWarning, in.RefusedReason, err.Error())
					return nil, nil
				}
				return nil, err
			}
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				in.Refused, in.RefusedReason = err.Error(), v1alpha1.ReasonInvalidSpec
				ev.add(sb, corev1.EventTypeWarning, in.RefusedReason, err.Error())
				return nil, nil
			}
			return nil, fmt.Errorf("create pod: %w", err)
		}
		if podCreatedIsNews(sb) {
			ev.add(sb, corev1.EventTypeNormal, "Created", "created pod "+newPod.Name)
		}
		return newPod, nil
	}
	return pod, nil
}

// deletePod deletes this very pod (its UID: never a successor of the same
// name); one already gone is no error.
func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	return ignoreNotFound(r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}))
}

// podNameTaken explains a create refused because the name exists. The
// sandbox's previous pod still going away is fine (its deletion requeues
// us); a pod the cache does not hold (it caches only labelled pods) that
// another owner controls is a name conflict.
func (r *Reconciler) podNameTaken(ctx context.Context, sb *v1alpha1.Sandbox, pod *corev1.Pod) error {
	existing := &corev1.Pod{}
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(pod), existing); err != nil {
		return ignoreNotFound(err)
	}
	if ownedBySandboxNamed(existing.OwnerReferences, sb.Name) {
		return nil
	}
	return conflictOf(pod)
}

func (r *Reconciler) writeStatus(ctx context.Context, sb *v1alpha1.Sandbox, st v1alpha1.SandboxStatus) error {
	if !statusWorthWriting(sb, st) {
		return nil
	}
	p, err := patch.Status(sb.Status, st)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if !r.KeepManagedFields && untrackFirst(sb) {
		// Not fatal: a member left tracked works, at the old cost.
		if err := r.Client.Patch(ctx, sb, adopt.Untrack); err != nil {
			log.FromContext(ctx).V(1).Info("member keeps its managedFields", "error", err.Error())
		}
	}
	sb.Status = st
	if err := r.Client.Status().Patch(ctx, sb, p); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	// The patch left the API server's answer in sb, which the pass only
	// reads from now on: the store keeps it, without managedFields, as the
	// cache keeps sandboxes (nothing reads them).
	sb.ManagedFields = nil
	r.written.Put(sb)
	return nil
}

// cleanupOrphans deletes the children of a sandbox that is gone. The garbage
// collector does the same on a full cluster; doing it here makes release
// prompt and works where no garbage collector runs.
func (r *Reconciler) cleanupOrphans(ctx context.Context, key types.NamespacedName) error {
	lists := []client.ObjectList{&corev1.PodList{}, &corev1.ServiceList{}, &corev1.PersistentVolumeClaimList{}}
	for _, list := range lists {
		if err := r.Client.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabels{v1alpha1.LabelSandbox: key.Name}); err != nil {
			return err
		}
		objs, err := metaItems(list)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if !ownedBySandboxNamed(obj.GetOwnerReferences(), key.Name) {
				continue
			}
			uid := obj.GetUID()
			if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy("Background")); ignoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
