package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// tracker follows claims, sandboxes and sandbox pods of one namespace
// through informers (watches that re-establish themselves) and records when
// each first reached a state: a claim Ready (with its sandbox named), a pod
// created (first seen), a sandbox Running. Waiters get the time the event
// was seen here.
type tracker struct {
	mu         sync.Mutex
	claimReady map[string]time.Time
	claimWarm  map[string]bool
	podSeen    map[string]time.Time
	sbRunning  map[string]time.Time
	sandboxes  map[string]bool
	waiters    map[string]chan time.Time // "kind/name"
	cancel     context.CancelFunc
}

func newTracker(ctx context.Context, cfg *rest.Config, scheme client.Client, ns string) (*tracker, error) {
	own, _ := labels.NewRequirement(v1alpha1.LabelSandbox, selection.Exists, nil)
	c, err := crcache.New(cfg, crcache.Options{
		Scheme:            scheme.Scheme(),
		DefaultNamespaces: map[string]crcache.Config{ns: {}},
		ByObject:          map[client.Object]crcache.ByObject{&corev1.Pod{}: {Label: labels.NewSelector().Add(*own)}},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &tracker{claimReady: map[string]time.Time{}, claimWarm: map[string]bool{}, podSeen: map[string]time.Time{},
		sbRunning: map[string]time.Time{}, sandboxes: map[string]bool{}, waiters: map[string]chan time.Time{}, cancel: cancel}
	add := func(obj client.Object, on func(any)) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    on,
			UpdateFunc: func(_, n any) { on(n) },
			DeleteFunc: func(o any) {
				if sb, ok := o.(*v1alpha1.Sandbox); ok {
					t.mu.Lock()
					delete(t.sandboxes, sb.Name)
					t.mu.Unlock()
				}
			},
		})
		return err
	}
	if err := add(&v1alpha1.SandboxClaim{}, t.onClaim); err != nil {
		cancel()
		return nil, err
	}
	if err := add(&corev1.Pod{}, t.onPod); err != nil {
		cancel()
		return nil, err
	}
	if err := add(&v1alpha1.Sandbox{}, t.onSandbox); err != nil {
		cancel()
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
	defer scancel()
	if !c.WaitForCacheSync(sctx) {
		cancel()
		return nil, fmt.Errorf("bench informers did not sync")
	}
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

// fire records the first time key reached its state and wakes its waiter.
// t.mu is held.
func (t *tracker) fire(m map[string]time.Time, kind, name string, now time.Time) {
	if _, seen := m[name]; seen {
		return
	}
	m[name] = now
	if ch := t.waiters[kind+"/"+name]; ch != nil {
		ch <- now
		delete(t.waiters, kind+"/"+name)
	}
}

func (t *tracker) onClaim(obj any) {
	c, ok := obj.(*v1alpha1.SandboxClaim)
	if !ok || c.Status.SandboxName == "" || !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady) {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.claimReady[c.Name]; !seen {
		t.claimWarm[c.Name] = c.Status.Warm
	}
	t.fire(t.claimReady, "claim", c.Name, now)
}

// onPod keys a pod by its sandbox (the pod is named after it).
func (t *tracker) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fire(t.podSeen, "pod", p.Labels[v1alpha1.LabelSandbox], now)
}

func (t *tracker) onSandbox(obj any) {
	sb, ok := obj.(*v1alpha1.Sandbox)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sandboxes[sb.Name] = true
	if sb.Status.Phase == v1alpha1.SandboxRunning {
		t.fire(t.sbRunning, "sandbox", sb.Name, now)
	}
}

// expect registers a waiter for kind ("claim", "pod", "sandbox") and name
// before the object is created; the channel gets the time it was seen.
func (t *tracker) expect(kind, name string) chan time.Time {
	ch := make(chan time.Time, 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	m := map[string]map[string]time.Time{"claim": t.claimReady, "pod": t.podSeen, "sandbox": t.sbRunning}[kind]
	if at, seen := m[name]; seen {
		ch <- at
		return ch
	}
	t.waiters[kind+"/"+name] = ch
	return ch
}

func (t *tracker) warm(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.claimWarm[name]
}

// counts is how many sandboxes exist in the namespace and how many of those
// were ever seen Running.
func (t *tracker) counts() (total, running int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.sandboxes {
		total++
		if _, ok := t.sbRunning[name]; ok {
			running++
		}
	}
	return total, running
}

// wait waits for ch until deadline.
func wait(ctx context.Context, ch chan time.Time, d time.Duration) (time.Time, error) {
	select {
	case at := <-ch:
		return at, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	case <-time.After(d):
		return time.Time{}, fmt.Errorf("not seen within %s", d)
	}
}
