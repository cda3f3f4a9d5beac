package lowmem

import (
	"hash/maphash"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Every Sandbox carries a copy of its pod (spec.podTemplate: containers,
// images, commands, env, resources, volumes, probes), decoded anew from
// every watch event, and the sandboxes of one template all carry the same
// one. The cache keeps one shared, read-only copy of each distinct pod
// template's contents instead (the slices, maps and strings behind
// spec.podTemplate; the PodTemplateSpec struct itself is inline in the
// Sandbox and stays one per sandbox). It is the same trick as TrimPod's
// shared container names.
//
// That is safe because cached objects are never written: a Get or List
// from the cache hands out a deep copy, and the readers that use the
// cache's own objects (adopt.Index, index.FromIndex, the pool members'
// views, adopt.TakeWrite's takeCopy) only read spec.podTemplate; the
// sandbox reconciler builds pods from a Get's copy, and BuildPod deep
// copies the spec again. A template is shared only when it is exactly
// equal (reflect.DeepEqual: nil and empty differ) to the one kept, so what
// any reader sees is what the API server sent.

// DefaultTransform is the cache's default transform: managedFields dropped
// from every object, its shared strings interned (intern.go) and, for a
// Sandbox, its pod template shared.
func DefaultTransform(in any) (any, error) {
	out, err := stripManagedFields(in)
	if err != nil {
		return out, err
	}
	switch o := out.(type) {
	case *v1alpha1.Sandbox:
		sharedTemplates.share(&o.Spec.PodTemplate)
		internSandbox(o)
	case metav1.Object:
		internMeta(o)
	}
	return out, nil
}

// sharedTemplates are the controller's shared pod templates.
var sharedTemplates = newTemplateSharer(maxSharedTemplates, maxTemplatesPerKey)

const (
	// maxSharedTemplates bounds what the sharer keeps: past it, it starts
	// over (the objects keep what they share; a new generation of shared
	// templates begins), so templates changed over months do not pile up.
	maxSharedTemplates = 256
	// maxTemplatesPerKey bounds the templates compared per key (the same
	// containers and images, other differences): the newest are kept.
	maxTemplatesPerKey = 4
)

// templateSharer keeps one copy of each distinct pod template, bucketed
// by templateKey and compared exactly within a bucket.
type templateSharer struct {
	mu       sync.Mutex
	byKey    map[uint64][]*corev1.PodTemplateSpec
	n        int
	max, per int
	seed     maphash.Seed
}

func newTemplateSharer(max, per int) *templateSharer {
	return &templateSharer{byKey: map[uint64][]*corev1.PodTemplateSpec{}, max: max, per: per, seed: maphash.MakeSeed()}
}

// share points t's contents at the kept copy of an equal template, or
// keeps t as that copy; true when t now shares a kept copy's contents.
// t must be the cache's own (never written afterwards).
func (s *templateSharer) share(t *corev1.PodTemplateSpec) bool {
	key := templateKey(s.seed, t)
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.byKey[key]
	if same := equalTemplate(t, kept); same != nil {
		*t = *same
		return true
	}
	if s.n >= s.max {
		clear(s.byKey)
		s.n = 0
		kept = nil
	}
	// The kept copy is t's own value: its contents are already the
	// cache's, read only.
	own := *t
	next, added := keepNewest(kept, &own, s.per)
	s.byKey[key] = next
	s.n += added
	return false
}

// equalTemplate is the template of kept exactly equal to t, or nil.
func equalTemplate(t *corev1.PodTemplateSpec, kept []*corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	for _, k := range kept {
		if reflect.DeepEqual(t, k) {
			return k
		}
	}
	return nil
}

// keepNewest puts t first in kept, dropping the oldest past per; added is
// how many templates the list grew by (0 when one was dropped).
func keepNewest(kept []*corev1.PodTemplateSpec, t *corev1.PodTemplateSpec, per int) (next []*corev1.PodTemplateSpec, added int) {
	if len(kept) < per {
		added = 1
	} else {
		kept = kept[:per-1]
	}
	next = make([]*corev1.PodTemplateSpec, 0, len(kept)+1)
	return append(append(next, t), kept...), added
}

// templateKey buckets a pod template by its containers' names and images,
// cheaply (no allocation): templates that differ there are never compared.
func templateKey(seed maphash.Seed, t *corev1.PodTemplateSpec) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range cs {
			h.WriteString(cs[i].Name)
			h.WriteByte(0)
			h.WriteString(cs[i].Image)
			h.WriteByte(0)
		}
		h.WriteByte(1)
	}
	return h.Sum64()
}
