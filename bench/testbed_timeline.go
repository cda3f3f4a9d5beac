package main

// Where a cold claim's time goes on the node bed: watches on the bench
// namespace's Pods and Sandboxes note when the benchmark first sees each
// stage of an object, so a cold claim splits into its hops (the bridge's
// create, the controller's pod, the scheduler, the kubelet, the
// controller's status, the bridge's answer) and a bare pod into the same
// kubelet stages. Watches, not polls: a 100 ms poll would add up to 100 ms
// to whatever it times.

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Stages as the watches see them; stCall and stAnswer are the benchmark's
// own call and its return.
const (
	stCall      = "call"
	stSandbox   = "Sandbox seen"
	stPod       = "pod seen"
	stScheduled = "pod scheduled"
	stReady     = "pod Ready"
	stRunning   = "Sandbox Running"
	stAnswer    = "answer"
)

// interval is one hop of a start, from one stage to the next.
type interval struct{ from, to, what string }

var (
	coldIntervals = []interval{
		{stCall, stSandbox, "claim call → Sandbox seen (the bridge's create)"},
		{stSandbox, stPod, "Sandbox → its pod seen (the controller)"},
		{stPod, stScheduled, "pod → scheduled (the scheduler)"},
		{stScheduled, stReady, "scheduled → pod Ready seen (the kubelet: volumes, containers, status)"},
		{stReady, stRunning, "pod Ready → Sandbox Running seen (the controller's status)"},
		{stRunning, stAnswer, "Sandbox Running → claim answered (the bridge)"},
	}
	bareIntervals = []interval{
		{stCall, stPod, "create call → pod seen"},
		{stPod, stScheduled, "pod → scheduled (the scheduler)"},
		{stScheduled, stReady, "scheduled → pod Ready seen (the kubelet)"},
	}
)

// timeline holds the first time each object (by name: a sandbox's pod has
// its name) was seen at each stage.
type timeline struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time
	stop context.CancelFunc
}

// watchTimeline starts the watches; stop ends them.
func (s *testbedSuite) watchTimeline(ctx context.Context) (*timeline, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &timeline{seen: map[string]map[string]time.Time{}, stop: cancel}
	wc, err := s.watchClient()
	if err != nil {
		cancel()
		return nil, err
	}
	pods, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(s.ns))
	if err != nil {
		cancel()
		return nil, err
	}
	sbs, err := wc.Watch(ctx, &v1alpha1.SandboxList{}, client.InNamespace(s.ns))
	if err != nil {
		pods.Stop()
		cancel()
		return nil, err
	}
	go followEvents(ctx, pods, func(now time.Time, obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		t.mark(pod.Name, stPod, now)
		if pod.Spec.NodeName != "" {
			t.mark(pod.Name, stScheduled, now)
		}
		if podReady(pod) {
			t.mark(pod.Name, stReady, now)
		}
	})
	go followEvents(ctx, sbs, func(now time.Time, obj any) {
		sb, ok := obj.(*v1alpha1.Sandbox)
		if !ok {
			return
		}
		t.mark(sb.Name, stSandbox, now)
		if sb.Status.Phase == v1alpha1.SandboxRunning {
			t.mark(sb.Name, stRunning, now)
		}
	})
	return t, nil
}

// followEvents calls on with each added or changed object of w and the
// time it arrived, until ctx ends or w closes.
func followEvents(ctx context.Context, w watch.Interface, on func(time.Time, any)) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				on(time.Now(), ev.Object)
			}
		}
	}
}

// mark keeps the first time name was seen at stage.
func (t *timeline) mark(name, stage string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.seen[name]
	if m == nil {
		m = map[string]time.Time{}
		t.seen[name] = m
	}
	if _, ok := m[stage]; !ok {
		m[stage] = at
	}
}

// split is the duration of each interval of name's start, with the call
// and the answer the benchmark timed itself; ok is false when a stage was
// not seen. Two watches (and the bridge's answer) can deliver in another
// order than the writes were made: an interval seen backwards is 0.
func (t *timeline) split(name string, call, answer time.Time, ivs []interval) (out []time.Duration, ok bool) {
	t.mu.Lock()
	at := map[string]time.Time{stCall: call, stAnswer: answer}
	for k, v := range t.seen[name] {
		at[k] = v
	}
	t.mu.Unlock()
	for _, iv := range ivs {
		from, ok1 := at[iv.from]
		to, ok2 := at[iv.to]
		if !ok1 || !ok2 {
			return nil, false
		}
		out = append(out, max(to.Sub(from), 0))
	}
	return out, true
}

// seenAt is when name was first seen at stage.
func (t *timeline) seenAt(name, stage string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.seen[name][stage]
	return at, ok
}

// stageSamples gathers one start's intervals, one slice per interval.
type stageSamples [][]time.Duration

func (ss *stageSamples) add(d []time.Duration) {
	if len(*ss) < len(d) {
		*ss = make([][]time.Duration, len(d))
	}
	for i := range d {
		(*ss)[i] = append((*ss)[i], d[i])
	}
}

// addStageRuns adds one run's samples of each interval to its series.
func addStageRuns(dst []series, run stageSamples) []series {
	if len(dst) < len(run) {
		dst = append(dst, make([]series, len(run)-len(dst))...)
	}
	for i := range run {
		dst[i].addRun(ms(run[i]))
	}
	return dst
}
