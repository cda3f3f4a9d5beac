package engine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
)

type event struct {
	typ EventType
	sb  Sandbox
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

func (e *Engine) snapshot(sb *sandbox) Sandbox {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sb.view()
}

func (e *Engine) publish(sb *sandbox) {
	e.hub.publish(event{typ: Modified, sb: e.snapshot(sb)})
}

// Watch sends the changes of matching sandboxes (after the matching ones
// as Added events when sendInitial) until ctx ends; the channel closes
// then, or sooner when the watcher falls behind (hub.publish).
func (e *Engine) Watch(ctx context.Context, namespace string, sel labels.Selector, includePool, sendInitial bool) <-chan Event {
	namespace = nsOr(namespace)
	sub := e.hub.subscribe()
	var initial []Sandbox
	if sendInitial {
		initial = e.List(namespace, sel, includePool)
	}
	// Unbuffered: the caller's own buffer (bridge/local's) is the only one
	// after the hub's, so a watcher is dropped as far behind as before.
	out := make(chan Event)
	go func() {
		defer close(out)
		defer e.hub.unsubscribe(sub)
		send := func(ev Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, sb := range initial {
			if !send(Event{Type: Added, Sandbox: sb}) {
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
				if !matches(&ev.sb, namespace, sel, includePool) {
					continue
				}
				if !send(Event{Type: ev.typ, Sandbox: ev.sb}) {
					return
				}
			}
		}
	}()
	return out
}

func matches(sb *Sandbox, namespace string, sel labels.Selector, includePool bool) bool {
	if sb.Namespace != namespace {
		return false
	}
	if !includePool && !sb.Claimed {
		return false
	}
	return sel == nil || sel.Matches(labels.Set(sb.Labels))
}
