package lowmem

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// The bridge caches every sandbox of its namespaces: with 5,000 of them,
// what each cached Sandbox holds is most of the bridge's memory. Each one
// carries a copy of its template's pod (spec.podTemplate: containers,
// volumes, resources, probes, the agent's settings), which only the
// controller reads, to make the pod. The bridge never does: a sandbox's
// answer (sandboxToProto), its claim (adopt.TakeWrite's parts), its lease,
// exposures, snapshots (spec.volumeClaimTemplates, kept) and idle checks
// read metadata, status and the rest of the spec. So the cache keeps
// sandboxes without it (slimSandbox), as it keeps them without
// managedFields. Every write of the bridge is a merge patch of the fields it
// changes (never an update of a cached object), so a slim object is never
// written back; TestSlimSandboxIsNeverRead checks no reader needs the pod.

// SandboxTransform is the sandbox informer's transform: managedFields and
// spec.podTemplate dropped before the object is stored.
func SandboxTransform() toolscache.TransformFunc {
	strip := crcache.TransformStripManagedFields()
	return func(o any) (any, error) {
		o, err := strip(o)
		if sb, ok := o.(*v1alpha1.Sandbox); ok && err == nil {
			slimSandbox(sb)
		}
		return o, err
	}
}

// slimSandbox drops what the bridge never reads from a sandbox it keeps
// (see above), in place.
func slimSandbox(sb *v1alpha1.Sandbox) {
	sb.Spec.PodTemplate = corev1.PodTemplateSpec{}
	sb.ManagedFields = nil
}
