package main

// Cold claims against bare pods on the node bed. The target is a cold
// claim at most a bare pod's start plus 20 ms, so the two are timed under
// the same conditions: alternately, each on a node with no pod of the
// bench left to tear down, each to Ready as the same watches see it.

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// coldStarts times s.p.ColdStarts cold claims of tmpl (its pool is empty)
// and as many bare pods of the same image and runtime, alternately, and
// splits each into its stages (testbed_timeline.go).
func (s *testbedSuite) coldStarts(ctx context.Context, c *sandpod.Client, tmpl, rt string, f *tbFigures) error {
	tl, err := s.watchTimeline(ctx)
	if err != nil {
		return err
	}
	defer tl.stop()
	var cold, bare []time.Duration
	var coldStages, bareStages stageSamples
	for i := 0; i < s.p.ColdStarts; i++ {
		if err := s.noPods(ctx); err != nil {
			return err
		}
		t0 := time.Now()
		sb, err := c.Claim(ctx, tmpl)
		t1 := time.Now()
		if err != nil {
			return err
		}
		if sb.Warm() {
			f.coldOut++
		} else {
			cold = append(cold, t1.Sub(t0))
			if d, ok := tl.split(sb.Name(), t0, t1, coldIntervals); ok {
				coldStages.add(d)
			}
		}
		_ = sb.Delete(ctx)

		if err := s.noPods(ctx); err != nil {
			return err
		}
		d, stages, err := s.barePod(ctx, tl, fmt.Sprintf("bare-%s-%d", rt, i), rt)
		if err != nil {
			return err
		}
		bare = append(bare, d)
		if stages != nil {
			bareStages.add(stages)
		}
	}
	f.cold.addRun(ms(cold))
	f.bare.addRun(ms(bare))
	logf("%s: cold claims, in order: %.1f ms", rt, ms(cold))
	logf("%s: bare pods, in order: %.1f ms", rt, ms(bare))
	f.coldStages = addStageRuns(f.coldStages, coldStages)
	f.bareStages = addStageRuns(f.bareStages, bareStages)
	return nil
}

// barePod starts a pod of the sandbox image and runtime with no sandpod
// (`sleep`, no grace period) and times its create call → Ready seen.
func (s *testbedSuite) barePod(ctx context.Context, tl *timeline, name, rt string) (time.Duration, []time.Duration, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}, Spec: tbPodSpec(rt)}
	pod.Spec.Containers[0].Command = []string{"sleep", "3600"}
	pod.Spec.TerminationGracePeriodSeconds = new(int64)
	t0 := time.Now()
	if err := s.kc.Create(ctx, pod); err != nil {
		return 0, nil, err
	}
	defer func() { _ = s.kc.Delete(ctx, pod) }()
	var ready time.Time
	if err := waitFor(ctx, 2*time.Minute, "bare pod ready", func() bool {
		var ok bool
		ready, ok = tl.seenAt(pod.Name, stReady)
		return ok
	}); err != nil {
		return 0, nil, err
	}
	stages, _ := tl.split(pod.Name, t0, ready, bareIntervals)
	return ready.Sub(t0), stages, nil
}
