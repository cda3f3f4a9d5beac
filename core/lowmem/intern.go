package lowmem

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Every string of a decoded object is its own allocation, and most strings
// of sandpod's cached objects are the same in every object of a kind: the
// namespace, the label keys, the template's name, the agent's labels, the
// owner's API version and kind, the finalizer, the phase and the
// conditions' types, statuses and reasons. At 5,000 sandboxes and their
// pods that is about 2 MiB of copies of a few dozen strings. The cache
// transforms point them at one copy each (internMeta and the kinds' own
// fields); strings unique to an object (its name, UID, resourceVersion,
// IPs, messages) are left alone, except that a label value or owner name
// equal to the object's name reuses the name's string.

// maxInterned bounds the interner: past it, it starts over (the objects
// keep the strings they share), so strings that turn out to be unique
// (user labels, say) cannot grow it for ever.
const maxInterned = 4096

// maxInternedLen: longer strings are not interned (a message, a hash).
const maxInternedLen = 96

// interner keeps one copy of each string it has seen.
type interner struct {
	mu  sync.Mutex
	set map[string]string
	max int
}

var strs = &interner{set: map[string]string{}, max: maxInterned}

// of is s's kept copy (s itself the first time it is seen).
func (in *interner) of(s string) string {
	if s == "" || len(s) > maxInternedLen {
		return s
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if k, ok := in.set[s]; ok {
		return k
	}
	if len(in.set) >= in.max {
		clear(in.set)
	}
	in.set[s] = s
	return s
}

// str interns *s in place.
func (in *interner) str(s *string) { *s = in.of(*s) }

// internMeta interns the shared strings of an object's metadata. Labels
// get a new map (a map's keys cannot be replaced in place); the owner
// references and finalizers are written in place: the object must be the
// caller's own (a transform's input).
func internMeta(m metav1.Object) {
	in := strs
	name := m.GetName()
	m.SetNamespace(in.of(m.GetNamespace()))
	if labels := m.GetLabels(); len(labels) > 0 {
		l := make(map[string]string, len(labels))
		for k, v := range labels {
			if v == name {
				v = name
			} else {
				v = in.of(v)
			}
			l[in.of(k)] = v
		}
		m.SetLabels(l)
	}
	refs := m.GetOwnerReferences()
	for i := range refs {
		o := &refs[i]
		in.str(&o.APIVersion)
		in.str(&o.Kind)
		if o.Name == name {
			o.Name = name
		} else {
			in.str(&o.Name)
		}
	}
	fin := m.GetFinalizers()
	for i := range fin {
		in.str(&fin[i])
	}
}

// internSandbox interns a cached Sandbox's shared strings (its pod
// template is shared whole: sharedtemplate.go).
func internSandbox(sb *v1alpha1.Sandbox) {
	in := strs
	internMeta(sb)
	if r := sb.Spec.TemplateRef; r != nil {
		in.str(&r.Name)
	}
	in.str((*string)(&sb.Status.Phase))
	in.str((*string)(&sb.Status.AgentAuth))
	if sb.Status.PodName == sb.Name {
		sb.Status.PodName = sb.Name
	}
	internConditions(sb.Status.Conditions)
}

func internConditions(cs []metav1.Condition) {
	in := strs
	for i := range cs {
		in.str(&cs[i].Type)
		in.str((*string)(&cs[i].Status))
		in.str(&cs[i].Reason)
	}
}

// internPod interns a trimmed pod's shared strings (TrimPod's output: its
// own slices, so they may be written).
func internPod(p *corev1.Pod) {
	in := strs
	internMeta(p)
	in.str((*string)(&p.Status.Phase))
	in.str(&p.Status.Reason)
	for i := range p.Status.Conditions {
		in.str((*string)(&p.Status.Conditions[i].Type))
		in.str((*string)(&p.Status.Conditions[i].Status))
	}
	for _, css := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range css {
			cs := &css[i]
			in.str(&cs.Name)
			if w := cs.State.Waiting; w != nil {
				in.str(&w.Reason)
			}
			if t := cs.LastTerminationState.Terminated; t != nil {
				in.str(&t.Reason)
			}
		}
	}
}
