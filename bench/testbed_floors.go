package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// tbFloorSamples is how many of each floor a runtime's section takes: they
// are cheap, and a p50 of a handful of samples on this machine is noise.
const tbFloorSamples = 30

// claimFloors times the two parts of a warm claim apart, with the same
// pacing as the claims (100 ms apart): the bridge hop (a GetSandbox, which
// its informer cache answers) and the API write (a merge patch of one
// annotation of the claimed sandbox, sent from the host straight to
// kube-apiserver). A warm claim is about one of each; what it costs beyond
// their sum is the bridge's own work.
func (s *testbedSuite) claimFloors(ctx context.Context, c *sandpod.Client, sb *sandpod.Sandbox, f *tbFigures) error {
	var gets, patches []time.Duration
	key := client.ObjectKey{Namespace: s.ns, Name: sb.Name()}
	for i := range tbFloorSamples {
		time.Sleep(100 * time.Millisecond)
		t0 := time.Now()
		if _, err := c.Get(ctx, sb.Name()); err != nil {
			return err
		}
		gets = append(gets, time.Since(t0))

		time.Sleep(100 * time.Millisecond)
		obj := &v1alpha1.Sandbox{}
		obj.Namespace, obj.Name = key.Namespace, key.Name
		p := client.RawPatch("application/merge-patch+json",
			fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.sandpod.dev/floor":"%d"}}}`, i))
		t0 = time.Now()
		if err := s.kc.Patch(ctx, obj, p); err != nil {
			return err
		}
		patches = append(patches, time.Since(t0))
	}
	f.get.addRun(ms(gets))
	f.patch.addRun(ms(patches))
	return s.patchVariants(ctx, key)
}

// patchVariants logs (no rows) what the same one-annotation merge patch
// costs with the API server's field validation off, and on a small built-in
// object (a ConfigMap): how much of the floor is the Sandbox's own weight in
// kube-apiserver (its size, schema, CEL rules, managedFields).
func (s *testbedSuite) patchVariants(ctx context.Context, key client.ObjectKey) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "floor-" + key.Name}}
	if err := s.kc.Create(ctx, cm); err != nil {
		return err
	}
	variants := []struct {
		name string
		obj  func() client.Object
		opts []client.PatchOption
	}{
		{"sandbox, fieldValidation=Ignore", func() client.Object {
			return &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		}, []client.PatchOption{client.FieldValidation("Ignore")}},
		{"sandbox, default", func() client.Object {
			return &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		}, nil},
		{"configmap", func() client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: cm.Name}}
		}, nil},
	}
	// Interleaved, so that the machine's load drifts over all alike.
	ds := make([][]time.Duration, len(variants))
	for i := range tbFloorSamples {
		for j, v := range variants {
			time.Sleep(100 * time.Millisecond)
			p := client.RawPatch("application/merge-patch+json",
				fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.sandpod.dev/floor":"v%d"}}}`, i))
			t0 := time.Now()
			if err := s.kc.Patch(ctx, v.obj(), p, v.opts...); err != nil {
				return err
			}
			ds[j] = append(ds[j], time.Since(t0))
		}
	}
	for j, v := range variants {
		logf("floor variant: merge patch of one annotation, %s: %s", v.name, summary(ms(ds[j])))
	}
	return nil
}

// summary is p50/p90/max of samples, for a log line.
func summary(v []float64) string {
	c := slices.Clone(v)
	slices.Sort(c)
	if len(c) == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %.2f ms, p90 %.2f ms, max %.2f ms (%d)", c[len(c)/2], c[len(c)*9/10], c[len(c)-1], len(c))
}
