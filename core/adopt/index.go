package adopt

import (
	"iter"
	"sync"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Index is the unclaimed warm pool members of each template, kept from the
// sandbox informer's events: what a claim chooses from (an Adoption's Next).
// Both claim paths use it: the bridge's ClaimSandbox and the SandboxClaim
// reconciler. Listing the members from the cache on every claim copied every
// sandbox of the template (claimed ones too) into a new list and matched each
// one's labels: in a burst of 500 claims through the bridge that was half of
// its CPU and most of its 1.4 GiB peak RSS; in the controller, the list
// (controller-runtime's meta.SetList copies each listed struct even without
// a deep copy) and the candidates' sort were a quarter of its CPU.
//
// Entries point at the informer's own objects, which are never modified in
// place (an update replaces the object), so they are only read: the write
// that takes a member copies what it changes (adopt.TakeWrite). The index
// is no fresher than the cache: a member it offers may already be taken,
// and the take's resourceVersion guard refuses it then.
type Index struct {
	mu sync.RWMutex
	// byTemplate: "namespace/template" → member name → member.
	byTemplate map[string]map[string]indexed
	// filed: "namespace/name" → the byTemplate key it is filed under.
	filed map[string]string
}

type indexed struct {
	view lifecycle.PoolMember
	sb   *v1alpha1.Sandbox
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{byTemplate: map[string]map[string]indexed{}, filed: map[string]string{}}
}

// Update files sb after an informer event: a live, unclaimed pool member
// under its template; anything else (claimed, deleting, deleted) nowhere.
func (x *Index) Update(sb *v1alpha1.Sandbox, deleted bool) {
	key := sb.Namespace + "/" + sb.Name
	tmpl, member := "", !deleted && sb.DeletionTimestamp == nil && Pooled(sb)
	if member {
		tmpl = memberKey(sb.Namespace, sb.Labels[v1alpha1.LabelTemplate], sb.Labels[v1alpha1.LabelSnapshot])
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.filed[key]; ok && old != tmpl {
		delete(x.byTemplate[old], sb.Name)
		if len(x.byTemplate[old]) == 0 {
			delete(x.byTemplate, old)
		}
		delete(x.filed, key)
	}
	if !member {
		return
	}
	m := x.byTemplate[tmpl]
	if m == nil {
		m = map[string]indexed{}
		x.byTemplate[tmpl] = m
	}
	m[sb.Name] = indexed{view: ToPoolMember(sb), sb: sb}
	x.filed[key] = tmpl
}

// memberKey files the members of a pool of forks apart from the plain
// members of their template: a claim from a snapshot takes only forks of
// it, a claim without one never takes a fork.
func memberKey(ns, template, snapshot string) string {
	if snapshot == "" {
		return ns + "/" + template
	}
	return ns + "/" + template + "@" + snapshot
}

// Pick returns the member a claim on ns/template (from snapshot, if set) takes next
// (lifecycle.BestCandidate), skipping the names skip refuses; the sandbox is
// the informer's object, to be read only.
func (x *Index) Pick(ns, template, snapshot, currentHash string, skip func(name string) bool) (*v1alpha1.Sandbox, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	m := x.byTemplate[memberKey(ns, template, snapshot)]
	views := func(yield func(lifecycle.PoolMember) bool) {
		for _, e := range m {
			if !yield(e.view) {
				return
			}
		}
	}
	name, ok := lifecycle.BestCandidate(iter.Seq[lifecycle.PoolMember](views), currentHash, skip)
	if !ok {
		return nil, false
	}
	return m[name].sb, true
}
