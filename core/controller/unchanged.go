package controller

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// sandboxChanged drops the update events of a Sandbox that change nothing
// but its resourceVersion as the cache holds it (the cache strips
// managedFields): the adopt.Untrack patch of each new pool member makes
// one, and every reconciler watching Sandboxes would run a pass for
// nothing. Resyncs (the same resourceVersion) pass as before.
var sandboxChanged = builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return !onlyVersionMoved(e.ObjectOld, e.ObjectNew)
}})

// onlyVersionMoved says whether new is old at a new resourceVersion, with
// the same metadata (less managedFields), spec and status.
func onlyVersionMoved(old, new client.Object) bool {
	o, ok := old.(*v1alpha1.Sandbox)
	n, ok2 := new.(*v1alpha1.Sandbox)
	if !ok || !ok2 || o.ResourceVersion == n.ResourceVersion || o.Generation != n.Generation {
		return false
	}
	om, nm := o.ObjectMeta, n.ObjectMeta
	om.ResourceVersion, nm.ResourceVersion = "", ""
	om.ManagedFields, nm.ManagedFields = nil, nil
	return equality.Semantic.DeepEqual(om, nm) &&
		equality.Semantic.DeepEqual(o.Spec, n.Spec) &&
		equality.Semantic.DeepEqual(o.Status, n.Status)
}
