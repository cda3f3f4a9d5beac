// Package template reconciles SandboxTemplates: the managed NetworkPolicy of
// their sandboxes and the spec hash warm pools roll on.
package template

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Reconciler keeps each template's NetworkPolicy and status.
type Reconciler struct {
	Client client.Client
	Clock  clock.Clock
}

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxtemplates/status,verbs=get;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete

// Reconcile runs one pass: fetch, network policy, status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	t := &v1alpha1.SandboxTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if t.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if err := r.reconcileNetworkPolicy(ctx, t); err != nil {
		return reconcile.Result{}, err
	}
	st := *t.Status.DeepCopy()
	st.ObservedGeneration = t.Generation
	st.SpecHash = lifecycle.TemplateHash(t.Spec)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReconciled,
		ObservedGeneration: t.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	if equality.Semantic.DeepEqual(st, t.Status) {
		return reconcile.Result{}, nil
	}
	orig := t.DeepCopy()
	t.Status = st
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, t, client.MergeFrom(orig)))
}

func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, t *v1alpha1.SandboxTemplate) error {
	existing := &networkingv1.NetworkPolicy{}
	key := client.ObjectKey{Namespace: t.Namespace, Name: NetworkPolicyName(t.Name)}
	err := r.Client.Get(ctx, key, existing)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if !ManagesNetworkPolicy(t) {
		if found && metav1.IsControlledBy(existing, t) {
			return client.IgnoreNotFound(r.Client.Delete(ctx, existing))
		}
		return nil
	}
	want := BuildNetworkPolicy(t)
	if !found {
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create network policy: %w", err)
		}
		return nil
	}
	if !metav1.IsControlledBy(existing, t) {
		return fmt.Errorf("network policy %s exists and is not managed by template %s", key.Name, t.Name)
	}
	if equality.Semantic.DeepEqual(existing.Spec, want.Spec) {
		return nil
	}
	existing.Spec = want.Spec
	return r.Client.Update(ctx, existing)
}
