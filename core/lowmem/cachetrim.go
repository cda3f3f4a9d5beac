package lowmem

import (
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The informer cache holds every sandbox, pod, secret and claim sandpod owns,
// so what each cached object keeps is the controller's memory at scale. At
// 5,000 sandboxes the pods alone took 65 MiB as Go structs, mostly spec and
// managedFields the reconcilers never read.

// stripManagedFields drops managedFields from every cached object: nothing
// in the controller reads them, and they are a third of an object's size.
var stripManagedFields = cache.TransformStripManagedFields()

// PodTransform is the cache transform of pods (see TrimPod).
func PodTransform(in any) (any, error) {
	if pod, ok := in.(*corev1.Pod); ok {
		out := TrimPod(pod)
		internPod(out) // writes what it shares with pod, the transform's own
		return out, nil
	}
	return DefaultTransform(in)
}

// TrimPod is what the controller keeps of a sandbox pod: the identity the
// sandbox reconciler matches and deletes it by (name, UID, labels, owners,
// deletion), and the status it maps to the sandbox's phase, conditions,
// IPs, waiting reason and agent restarts (sandbox.WorkloadOf, ComputeStatus):
// of the pod's conditions, only Ready's status.
// The spec is the controller's own (BuildPod) and is never read back, so it
// goes, but for the containers' names (the agent runs in one of them).
// Nothing may update a pod from the cache: the update would carry no spec.
func TrimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID,
			ResourceVersion: p.ResourceVersion, Generation: p.Generation,
			CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
			Labels: p.Labels, OwnerReferences: p.OwnerReferences, Finalizers: p.Finalizers,
		},
		Status: corev1.PodStatus{
			Phase: p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message,
			Conditions: p.Status.Conditions, PodIPs: p.Status.PodIPs,
			InitContainerStatuses: trimContainerStatuses(p.Status.InitContainerStatuses),
			ContainerStatuses:     trimContainerStatuses(p.Status.ContainerStatuses),
		},
	}
	if len(p.Spec.Containers) > 0 {
		out.Spec.Containers = containerNames(p.Spec.Containers)
	}
	// Of the conditions only Ready is read (sandbox.WorkloadOf), and only
	// its status: the others (scheduled, initialized, containers ready,
	// sandbox ready) and the probe and transition times would be four of
	// every five conditions held per pod.
	out.Status.Conditions = nil
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	return out
}

// sharedContainers holds one shared, read-only []corev1.Container with
// only the names, per list of container names: a Container is 408 bytes,
// and every pod of a template has the same names, so the cache keeps one
// list instead of one per pod (2 MiB at 5,000 pods). Cached objects are
// never written (a Get hands out a deep copy). Past maxSharedContainers
// lists it stops sharing.
var sharedContainers sync.Map // names joined by NUL -> []corev1.Container

const maxSharedContainers = 1024

var sharedContainerCount atomic.Int64

// containerNames is cs with only the names (the sandbox reconciler finds
// the agent's container by name: v1alpha1.AgentContainerIndex).
func containerNames(cs []corev1.Container) []corev1.Container {
	names := make([]string, len(cs))
	for i := range cs {
		names[i] = cs[i].Name
	}
	key := strings.Join(names, "\x00")
	if v, ok := sharedContainers.Load(key); ok {
		return v.([]corev1.Container)
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i].Name = cs[i].Name
	}
	if sharedContainerCount.Load() >= maxSharedContainers {
		return out
	}
	if v, loaded := sharedContainers.LoadOrStore(key, out); loaded {
		return v.([]corev1.Container)
	}
	sharedContainerCount.Add(1)
	return out
}

// trimContainerStatuses keeps a container's name, its waiting reason (the
// message a starting sandbox shows), its restarts and how it last ended
// (the agent's restarts); images, IDs and resources are not read.
func trimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i] = corev1.ContainerStatus{Name: cs.Name, Ready: cs.Ready, RestartCount: cs.RestartCount}
		if w := cs.State.Waiting; w != nil {
			out[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			out[i].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason, FinishedAt: t.FinishedAt}
		}
	}
	return out
}

// CachedForm is obj as the controller's cache holds it, made by the cache's
// own transforms on a copy: pods trimmed, sandboxes' pod templates shared
// (sharedtemplate.go), shared strings interned (intern.go), everything
// without managedFields; nil for Secrets, which it does not cache at all.
// The kwok benchmark sizes the cache with it.
func CachedForm(obj client.Object) client.Object {
	var out any
	switch o := obj.(type) {
	case *corev1.Secret:
		return nil // never cached: read by name (ClientOptions)
	case *corev1.Pod:
		// A copy: internPod writes what TrimPod shares with its input.
		out, _ = PodTransform(o.DeepCopy())
	default:
		out, _ = DefaultTransform(obj.DeepCopyObject())
	}
	return out.(client.Object)
}
