package adopt

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Holder is whoever takes a sandbox out of its pool: a SandboxClaim (the
// controller's claim reconciler) or a claim request to the bridge.
type Holder struct {
	Labels    map[string]string
	Env       []corev1.EnvVar
	Lifecycle v1alpha1.Lifecycle
	// RestartOnFailure, resolved (lifecycle.RestartOnFailure).
	RestartOnFailure bool
	// RequestID is the client request that took it (may be empty).
	RequestID string
	// Annotations are set in the same write (the bridge's lease and claim time).
	Annotations map[string]string
}

// Take rewrites a member as no longer in its pool: the pool label and the
// pool's controlling owner reference go (the pool refills), the pool's name
// stays as an annotation, and the holder's labels, env, lifecycle,
// restartOnFailure and request id are set. One write of the result (with the member's
// resourceVersion, so two takers never get the same member) is a warm claim.
func Take(sb *v1alpha1.Sandbox, h Holder) {
	if sb.Labels == nil {
		sb.Labels = map[string]string{}
	}
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	for k, v := range h.Labels {
		sb.Labels[k] = v
	}
	if pool, ok := sb.Labels[v1alpha1.LabelPool]; ok {
		sb.Annotations[v1alpha1.AnnotationFromPool] = pool
	}
	delete(sb.Labels, v1alpha1.LabelPool)
	if h.RequestID != "" {
		sb.Annotations[v1alpha1.AnnotationRequestID] = h.RequestID
	}
	for k, v := range h.Annotations {
		sb.Annotations[k] = v
	}
	var refs []metav1.OwnerReference
	for _, ref := range sb.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			refs = append(refs, ref)
		}
	}
	sb.OwnerReferences = refs
	sb.Spec.Env = append(sb.Spec.Env[:0:0], h.Env...)
	sb.Spec.Lifecycle = h.Lifecycle
	sb.Spec.RestartOnFailure = h.RestartOnFailure
}
