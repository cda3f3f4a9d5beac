// Package template reconciles SandboxTemplates: the managed NetworkPolicy of
// their sandboxes and the spec hash warm pools roll on.
package template

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// APIReader reads the API server's own EndpointSlice uncached (one
	// object: a cache of every EndpointSlice would cost far more). Nil: the
	// policies carve out no API server address.
	APIReader client.Reader
	Clock     clock.Clock
	// ExtraDNS are DNS servers outside kube-system's pods that the managed
	// policies let sandboxes reach on port 53 (--dns-egress).
	ExtraDNS []netip.Prefix
}

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxtemplates/status,verbs=get;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get,resourceNames=kubernetes

// Reconcile runs one pass: fetch, network policy, status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	t := &v1alpha1.SandboxTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if t.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	apiErr := r.reconcileNetworkPolicy(ctx, t)
	if apiErr != nil && !errors.Is(apiErr, errAPIServerUnknown) {
		return reconcile.Result{}, apiErr
	}
	st := *t.Status.DeepCopy()
	st.ObservedGeneration = t.Generation
	st.SpecHash = lifecycle.TemplateHash(t.Spec)
	ok, reason, msg := true, v1alpha1.ReasonReconciled, ""
	if _, err := lifecycle.CheckEgress(t.Spec.NetworkPolicy); err != nil && ManagesNetworkPolicy(t) {
		// The policy went out with no egress (fail closed); say why.
		ok, reason, msg = false, v1alpha1.ReasonInvalidSpec, err.Error()+" (sandboxes of this template get no egress until it is fixed)"
	}
	lifecycle.SetCondition(&st.Conditions, v1alpha1.ConditionReady, ok, reason, msg, t.Generation, r.Clock.Now())
	if !equality.Semantic.DeepEqual(st, t.Status) {
		orig := t.DeepCopy()
		t.Status = st
		if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	// An unknown API server address is retried with backoff; the policy
	// (without that carve-out) is in place meanwhile.
	return reconcile.Result{}, apiErr
}

// errAPIServerUnknown wraps a failure to read the API server's addresses.
var errAPIServerUnknown = errors.New("the API server's addresses are unknown (its EndpointSlice default/kubernetes)")

// apiServerAddrs are the addresses of the API server's endpoints: the
// EndpointSlice "kubernetes" of the default namespace, which the API server
// keeps itself.
func (r *Reconciler) apiServerAddrs(ctx context.Context) ([]netip.Addr, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	es := &discoveryv1.EndpointSlice{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, es)
	if apierrors.IsNotFound(err) {
		return nil, nil // an API server that publishes no endpoints (--endpoint-reconciler-type none)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAPIServerUnknown, err)
	}
	var out []netip.Addr
	for _, ep := range es.Endpoints {
		for _, a := range ep.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
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
	apiServer, apiErr := r.apiServerAddrs(ctx)
	want := BuildNetworkPolicy(t, r.ExtraDNS, apiServer...)
	if !found {
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create network policy: %w", err)
		}
		return apiErr
	}
	if !metav1.IsControlledBy(existing, t) {
		return fmt.Errorf("network policy %s exists and is not managed by template %s", key.Name, t.Name)
	}
	if equality.Semantic.DeepEqual(existing.Spec, want.Spec) {
		return apiErr
	}
	existing.Spec = want.Spec
	if err := r.Client.Update(ctx, existing); err != nil {
		return err
	}
	return apiErr
}
