package engine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

type event struct {
	typ sandpodv1.WatchSandboxesResponse_EventType
	sb  *sandpodv1.Sandbox
}

// hub fans sandbox changes out to watchers and to callers waiting for a
// sandbox to become ready.
type hub struct {
	mu   sync.Mutex
	subs map[chan event]struct{}
}

func newHub() *hub { return &hub{subs: map[chan event]struct{}{}} }

func (h *hub) subscribe() chan event {
	ch := make(chan event, 256)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan event) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

// publish never blocks: a watcher that falls 256 events behind loses
// events, and its stream is closed so the client re-lists (as a Kubernetes
// watch does when it is too old).
func (h *hub) publish(ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- ev:
		default:
			delete(h.subs, ch)
			close(ch)
		}
	}
}

func (e *Engine) snapshot(sb *sandbox) *sandpodv1.Sandbox {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sb.toProto()
}

func (e *Engine) publish(sb *sandbox) {
	e.hub.publish(event{typ: sandpodv1.WatchSandboxesResponse_EVENT_TYPE_MODIFIED, sb: e.snapshot(sb)})
}

// WatchSandboxes streams changes of matching sandboxes until ctx ends.
func (e *Engine) WatchSandboxes(ctx context.Context, namespace string, sel labels.Selector, includePool, sendInitial bool) (<-chan *sandpodv1.WatchSandboxesResponse, error) {
	namespace = nsOr(namespace)
	sub := e.hub.subscribe()
	var initial []*sandpodv1.Sandbox
	if sendInitial {
		initial, _ = e.ListSandboxes(ctx, namespace, sel, includePool)
	}
	out := make(chan *sandpodv1.WatchSandboxesResponse, 16)
	go func() {
		defer close(out)
		defer e.hub.unsubscribe(sub)
		send := func(r *sandpodv1.WatchSandboxesResponse) bool {
			select {
			case out <- r:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, sb := range initial {
			if !send(&sandpodv1.WatchSandboxesResponse{Type: sandpodv1.WatchSandboxesResponse_EVENT_TYPE_ADDED, Sandbox: sb}) {
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-sub:
				if !ok {
					return
				}
				if !matches(ev.sb, namespace, sel, includePool) {
					continue
				}
				if !send(&sandpodv1.WatchSandboxesResponse{Type: ev.typ, Sandbox: ev.sb}) {
					return
				}
			}
		}
	}()
	return out, nil
}

func matches(sb *sandpodv1.Sandbox, namespace string, sel labels.Selector, includePool bool) bool {
	if sb.GetNamespace() != namespace {
		return false
	}
	if !includePool && !sb.GetClaimed() {
		return false
	}
	return sel == nil || sel.Matches(labels.Set(sb.GetLabels()))
}
