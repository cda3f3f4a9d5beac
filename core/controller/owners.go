package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// controlledBy maps a child (pod, Service, PVC, NetworkPolicy) to the
// sandpod object of kind that controls it, in the child's namespace: what
// Owns(child) enqueues with controller-runtime's EnqueueRequestForOwner
// (OnlyControllerOwner). That handler asks the REST mapper whether the
// owner is namespaced on every event, and the mapper's lookup made about
// 8 KiB of garbage each time: 40 MiB when a restarted controller lists
// 5,000 pods, more in a burst of claims. sandpod's kinds are all
// namespaced, so the answer is known.
func controlledBy(kind string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if req, ok := controllerRequest(o, kind); ok {
			return []reconcile.Request{req}
		}
		return nil
	})
}

// controllerRequest is the request for o's controller owner when that
// owner is a sandpod.dev object of kind.
func controllerRequest(o client.Object, kind string) (reconcile.Request, bool) {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		// Only the controller reference counts, as for OnlyControllerOwner.
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != v1alpha1.GroupVersion.Group || ref.Kind != kind {
			return reconcile.Request{}, false
		}
		return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}, true
	}
	return reconcile.Request{}, false
}
