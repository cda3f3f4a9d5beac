package kube

import (
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

type eventType int

const (
	eventAdded eventType = iota
	eventModified
	eventDeleted
)

var eventToProto = map[eventType]sandpodv1.WatchSandboxesResponse_EventType{
	eventAdded:    sandpodv1.WatchSandboxesResponse_EVENT_TYPE_ADDED,
	eventModified: sandpodv1.WatchSandboxesResponse_EVENT_TYPE_MODIFIED,
	eventDeleted:  sandpodv1.WatchSandboxesResponse_EVENT_TYPE_DELETED,
}

// watchBuffer is how many events a watcher may fall behind before it is
// dropped (the bridge then ends its stream with Aborted: list and watch again).
const watchBuffer = 1024

// hub turns informer events into wake-ups for waiting calls and into
// events for WatchSandboxes streams.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	subs    map[*subscriber]struct{}
	// clusterDomain: the Backend's, for the sandboxes of the events.
	clusterDomain string
}

type subscriber struct {
	namespace   string
	selector    labels.Selector
	includePool bool
	ch          chan *sandpodv1.WatchSandboxesResponse
}

func newHub(clusterDomain string) *hub {
	return &hub{waiters: map[string]map[chan struct{}]struct{}{}, subs: map[*subscriber]struct{}{}, clusterDomain: clusterDomain}
}

// listen returns a channel that receives after any event for key, and a
// function that stops listening. Callers check the cache after listen and
// again after each wake-up, so an event between the check and the wait is
// never lost.
func (h *hub) listen(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.waiters[key] == nil {
		h.waiters[key] = map[chan struct{}]struct{}{}
	}
	h.waiters[key][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.waiters[key], ch)
		if len(h.waiters[key]) == 0 {
			delete(h.waiters, key)
		}
		h.mu.Unlock()
	}
}

func (h *hub) wake(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[key] {
		select {
		case ch <- struct{}{}:
		default: // already signalled
		}
	}
}

// subscribe registers a watcher; cancel unregisters it and closes its channel.
func (h *hub) subscribe(s *subscriber) (cancel func()) {
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return func() { h.drop(s) }
}

func (h *hub) drop(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.ch)
	}
}

func (h *hub) publish(t eventType, sb *v1alpha1.Sandbox) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ev *sandpodv1.WatchSandboxesResponse
	for s := range h.subs {
		if !s.matches(sb) {
			continue
		}
		if ev == nil {
			ev = &sandpodv1.WatchSandboxesResponse{Type: eventToProto[t], Sandbox: sandboxToProto(sb, h.clusterDomain)}
		}
		select {
		case s.ch <- ev:
		default: // fell behind: end its stream rather than block the informer
			delete(h.subs, s)
			close(s.ch)
		}
	}
}

func (s *subscriber) matches(sb *v1alpha1.Sandbox) bool {
	return sb.Namespace == s.namespace && (s.includePool || !isPoolMember(sb)) && s.selector.Matches(labels.Set(sb.Labels))
}
