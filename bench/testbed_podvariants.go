package main

// Which part of a sandbox pod's spec costs the kubelet time
// (-testbed-pod-variants N): the pod the controller makes for a sandbox,
// created directly (no Sandbox, no controller hop) with one feature taken
// away at a time, against a bare pod of the same image and runtime; each
// timed from scheduled to Ready by the watches of testbed_timeline.go, the
// variants round-robin, each start on an idle node. A diagnostic, not a
// target: it runs only when asked.

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

var testbedPodVariants = flag.Int("testbed-pod-variants", 0, "the testbed suite also starts N pods of each variant of a sandbox's pod spec (the controller's pod with one feature removed at a time) and of a bare pod, per runtime: where the kubelet's time goes (0: off)")

// podVariant derives one variant from the controller's pod spec.
type podVariant struct {
	name  string
	apply func(sandbox corev1.PodSpec, bare corev1.PodSpec) corev1.PodSpec
}

// sleepInstead runs the image's `sleep` instead of the agent (no probe).
func sleepInstead(s *corev1.PodSpec) {
	c := &s.Containers[0]
	c.Command, c.Args, c.LivenessProbe = []string{"sleep", "3600"}, nil, nil
}

var podVariants = []podVariant{
	{"bare pod (sleep)", func(_, bare corev1.PodSpec) corev1.PodSpec { sleepInstead(&bare); return bare }},
	{"sandbox pod (agent)", func(sb, _ corev1.PodSpec) corev1.PodSpec { return sb }},
	{"sandbox pod, sleep instead of the agent", func(sb, _ corev1.PodSpec) corev1.PodSpec { sleepInstead(&sb); return sb }},
	{"… and no security context", func(sb, _ corev1.PodSpec) corev1.PodSpec {
		sleepInstead(&sb)
		sb.SecurityContext, sb.Containers[0].SecurityContext = nil, nil
		return sb
	}},
	{"… and no resources", func(sb, _ corev1.PodSpec) corev1.PodSpec {
		sleepInstead(&sb)
		sb.Containers[0].Resources = corev1.ResourceRequirements{}
		return sb
	}},
	{"… and no agent image volume", func(sb, _ corev1.PodSpec) corev1.PodSpec {
		sleepInstead(&sb)
		sb.Volumes = slices.DeleteFunc(sb.Volumes, func(v corev1.Volume) bool { return v.Image != nil })
		c := &sb.Containers[0]
		c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return !slices.ContainsFunc(sb.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		})
		return sb
	}},
	{"… and no volumes at all (the kubelet skips its 300 ms volume check)", func(sb, _ corev1.PodSpec) corev1.PodSpec {
		sleepInstead(&sb)
		sb.Volumes, sb.Containers[0].VolumeMounts = nil, nil
		return sb
	}},
}

// podVariantRows starts n pods of each variant for runtime rt.
func (s *testbedSuite) podVariantRows(ctx context.Context, rt string, n int) ([]Row, error) {
	model, err := s.sandboxPodSpec(ctx, rt)
	if err != nil {
		return nil, err
	}
	bare := tbPodSpec(rt)
	tl, err := s.watchTimeline(ctx)
	if err != nil {
		return nil, err
	}
	defer tl.stop()
	got := make([][]time.Duration, len(podVariants))
	for i := 0; i < n; i++ {
		for v, pv := range podVariants {
			if err := s.noPods(ctx); err != nil {
				return nil, err
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: fmt.Sprintf("variant-%s-%d-%d", rt, v, i)},
				Spec:       pv.apply(*model.DeepCopy(), *bare.DeepCopy()),
			}
			pod.Spec.TerminationGracePeriodSeconds = new(int64)
			if err := s.kc.Create(ctx, pod); err != nil {
				return nil, fmt.Errorf("variant %q: %w", pv.name, err)
			}
			var ready time.Time
			err := waitFor(ctx, 2*time.Minute, "variant pod ready", func() bool {
				var ok bool
				ready, ok = tl.seenAt(pod.Name, stReady)
				return ok
			})
			_ = s.kc.Delete(ctx, pod)
			if err != nil {
				return nil, fmt.Errorf("variant %q: %w", pv.name, err)
			}
			if sched, ok := tl.seenAt(pod.Name, stScheduled); ok {
				got[v] = append(got[v], max(ready.Sub(sched), 0))
			}
		}
	}
	var rows []Row
	for v, pv := range podVariants {
		var sr series
		sr.addRun(ms(got[v]))
		p50, p99, runs := sr.latencyStats()
		rows = append(rows, Row{Section: "k8s-" + rt, Figure: "pod spec variant, scheduled → Ready: " + pv.name, Kind: "latency", Unit: "ms",
			P50: p50, P99: p99, Samples: sr.samples(), Runs: len(runs), PerRun: runs,
			Note: "created directly, round-robin with the other variants on an idle node (-testbed-pod-variants)"})
	}
	return rows, nil
}

// sandboxPodSpec is the spec of the pod the controller makes for a sandbox
// of the bench image on runtime rt, read back from a Sandbox made for it.
func (s *testbedSuite) sandboxPodSpec(ctx context.Context, rt string) (*corev1.PodSpec, error) {
	sb := &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "variant-model-" + rt},
		Spec:       v1alpha1.SandboxSpec{PodTemplate: corev1.PodTemplateSpec{Spec: tbPodSpec(rt)}},
	}
	if err := s.kc.Create(ctx, sb); err != nil {
		return nil, err
	}
	defer func() { _ = s.kc.Delete(ctx, sb) }()
	pod := &corev1.Pod{}
	if err := waitFor(ctx, time.Minute, "the model sandbox's pod", func() bool {
		return s.kc.Get(ctx, client.ObjectKeyFromObject(sb), pod) == nil
	}); err != nil {
		return nil, err
	}
	spec := pod.Spec.DeepCopy()
	spec.NodeName = ""
	return spec, nil
}
