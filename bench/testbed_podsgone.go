package main

// Waiting until the bench namespace holds no pod: on a watch (a list, then
// its events from that list's version, again after the watch ends), so the
// wait ends when the last pod is gone rather than at a poll's tick, and it
// says which pods it still waits for.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// podsGoneWithin bounds a wait for the namespace's pods to go: a pod's
// teardown on the loaded 2-core node (a gVisor sandbox's, a pool of 12
// scaled to 0 at once) took up to a minute or more; a wait that ends sooner
// than the pods is a failed phase, not a faster one.
const podsGoneWithin = 10 * time.Minute

// podState is how a pod left in the namespace is described.
func podState(p *corev1.Pod) string {
	return fmt.Sprintf("%s (%s, deleting: %t)", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
}

// applyPodEvent updates left (pod name → state) with one watch event. It
// returns false for an event that ends the watch's use (an error or a
// bookmark-less expiry): the caller lists again.
func applyPodEvent(left map[string]string, ev watch.Event) bool {
	switch ev.Type {
	case watch.Error:
		return false
	case watch.Bookmark:
		return true
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return true
	}
	if ev.Type == watch.Deleted {
		delete(left, p.Name)
	} else {
		left[p.Name] = podState(p)
	}
	return true
}

// podsLeft names the pods of left, sorted.
func podsLeft(left map[string]string) string {
	var out []string
	for _, st := range left {
		out = append(out, st)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// noPods waits until the bench namespace has no pod left, so that a start
// is timed on an idle node: a pod still being torn down (the last claim's,
// a drained pool's) competes for the node's two cores with the start being
// timed. It logs what it still waits for every 30 s and names it when
// podsGoneWithin runs out.
func (s *testbedSuite) noPods(ctx context.Context) error {
	if s.podWatch == nil {
		wc, err := s.watchClient()
		if err != nil {
			return err
		}
		s.podWatch = wc
	}
	wc := s.podWatch
	ctx, cancel := context.WithTimeout(ctx, podsGoneWithin)
	defer cancel()
	t0 := time.Now()
	left := map[string]string{}
	nextLog := t0.Add(30 * time.Second)
	for ctx.Err() == nil {
		var pods corev1.PodList
		if err := wc.List(ctx, &pods, client.InNamespace(s.ns)); err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		clear(left)
		for i := range pods.Items {
			left[pods.Items[i].Name] = podState(&pods.Items[i])
		}
		if len(left) == 0 {
			return nil
		}
		w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(s.ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pods.ResourceVersion}})
		if err != nil {
			continue
		}
		tick := time.NewTicker(5 * time.Second)
	events:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok || !applyPodEvent(left, ev) {
					break events
				}
				if len(left) == 0 {
					w.Stop()
					tick.Stop()
					return nil
				}
			case now := <-tick.C:
				if now.After(nextLog) {
					logf("waiting for the bench namespace's pods to go (%s so far): %s", now.Sub(t0).Round(time.Second), podsLeft(left))
					nextLog = now.Add(30 * time.Second)
				}
			case <-ctx.Done():
				break events
			}
		}
		w.Stop()
		tick.Stop()
		select { // the watch ended (expired, or an error event): list again
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("pods gone: still there after %s: %s", time.Since(t0).Round(time.Second), podsLeft(left))
}

// clearNamespace deletes what the earlier phases may have left in the
// bench namespace (pools first, so none refills, then claims, sandboxes and
// bare pods) and waits until every pod is gone: a phase that failed midway
// leaves its pool and its sandboxes running.
func (s *testbedSuite) clearNamespace(ctx context.Context) error {
	in := client.InNamespace(s.ns)
	for _, o := range []client.Object{&v1alpha1.SandboxWarmPool{}, &v1alpha1.SandboxClaim{}, &v1alpha1.Sandbox{}, &corev1.Pod{}} {
		if err := client.IgnoreNotFound(s.kc.DeleteAllOf(ctx, o, in)); err != nil {
			return fmt.Errorf("delete the earlier phases' %T: %w", o, err)
		}
	}
	return s.noPods(ctx)
}
