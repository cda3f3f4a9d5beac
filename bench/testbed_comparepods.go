package main

// The pods of the side by side claims (testbed_compare.go): what the
// benchmark waits for before a warm claim, and what it logs of each
// product's pod.

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// describePod logs what a product's pod holds beyond the container both
// ask for: what the kubelet sets up before Ready differs with it.
func (s *testbedSuite) describePod(ctx context.Context, prod, name string) {
	pod := &corev1.Pod{}
	if err := s.kc.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, pod); err != nil {
		logf("%s pod %s: %v", prod, name, err)
		return
	}
	var vols, inits, ctrs []string
	for _, v := range pod.Spec.Volumes {
		kind := "other"
		switch {
		case v.Projected != nil:
			kind = "projected"
		case v.Image != nil:
			kind = "image"
		case v.EmptyDir != nil:
			kind = "emptyDir"
		case v.Secret != nil:
			kind = "secret"
		case v.ConfigMap != nil:
			kind = "configMap"
		}
		vols = append(vols, v.Name+"("+kind+")")
	}
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		ctrs = append(ctrs, fmt.Sprintf("%s%q probes:%t", c.Name, append(c.Command, c.Args...), c.ReadinessProbe != nil || c.StartupProbe != nil))
	}
	logf("%s pod %s: containers %v, init %v, volumes %v, runtimeClass %v, hostNetwork %t",
		prod, name, ctrs, inits, vols, ptrStr(pod.Spec.RuntimeClassName), pod.Spec.HostNetwork)
}

func ptrStr(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

// podsSettled waits until the bench namespace holds exactly n pods, all
// Ready and none going away: both warm pools full, their refills done, the
// last claim's pod gone.
func (s *testbedSuite) podsSettled(ctx context.Context, n int) error {
	return waitFor(ctx, 3*time.Minute, "pools full, node idle", func() bool {
		var pods corev1.PodList
		if s.kc.List(ctx, &pods, client.InNamespace(s.ns)) != nil {
			return false
		}
		return podsSettled(pods.Items, n)
	})
}

// podsSettled: exactly n pods, each Ready and none being deleted.
func podsSettled(pods []corev1.Pod, n int) bool {
	if len(pods) != n {
		return false
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !podReady(&p) {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
