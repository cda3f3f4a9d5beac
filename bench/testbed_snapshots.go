package main

// Snapshots with real pods: the node bed's CSI driver (StorageClass
// sandpod-csi, hack/testbed/csi.sh) under SandboxSnapshots, through the
// bridge with the Go client, as an RL loop uses them: snapshot a set-up
// sandbox, fork 8 from it, put one back.

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// tbSnapFigures are the real-pod snapshot figures (runc).
type tbSnapFigures struct{ snapshot, fork8, restore series }

// tbSnapRounds is how many snapshot, fork-of-8 and restore rounds run:
// each fork starts 8 pods on a 2-core node.
func tbSnapRounds(quick bool) int {
	if quick {
		return 1
	}
	return 3
}

// snapshots times SnapshotSandbox (until READY), ForkSandbox of 8 (until
// all run) and RestoreSandbox (until it runs again) on a sandbox whose
// workspace is a CSI volume with a file in it.
func (s *testbedSuite) snapshots(ctx context.Context, rounds int) (*tbSnapFigures, error) {
	sc := "sandpod-csi"
	spec := tbPodSpec("runc")
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}}
	tmpl := &v1alpha1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "bench-snap"},
		Spec: v1alpha1.SandboxTemplateSpec{PodTemplate: corev1.PodTemplateSpec{Spec: spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "workspace"},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: &sc, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}}},
	}
	if err := s.kc.Create(ctx, tmpl); err != nil {
		return nil, err
	}
	c, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// The bridge reads templates from its informer cache: a template made a
	// moment ago may not be there yet.
	var src *sandpod.Sandbox
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if src, err = c.Create(ctx, tmpl.Name); err == nil || !errors.Is(err, sandpod.ErrNotFound) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = src.Delete(context.WithoutCancel(ctx)) }()
	// 10 MiB of files: an environment set up once.
	if res, err := src.Run(ctx, "mkdir -p env && for i in $(seq 10); do head -c 1048576 /dev/urandom > env/f$i; done && sync"); err != nil || res.ExitCode != 0 {
		return nil, fmt.Errorf("set up the workspace: %v %v", res, err)
	}
	f := &tbSnapFigures{}
	var snaps, forks, restores []time.Duration
	defer func() { // what was measured, also when a round failed
		for _, x := range []struct {
			sr *series
			d  []time.Duration
		}{{&f.snapshot, snaps}, {&f.fork8, forks}, {&f.restore, restores}} {
			if len(x.d) > 0 {
				x.sr.addRun(ms(x.d))
			}
		}
	}()
	for i := 0; i < rounds; i++ {
		t0 := time.Now()
		snap, err := src.Snapshot(ctx)
		if err != nil {
			return f, err
		}
		if snap.Info().Phase != "Ready" {
			return f, fmt.Errorf("snapshot %s is %s when SnapshotSandbox answered", snap.Name(), snap.Info().Phase)
		}
		snaps = append(snaps, time.Since(t0))
		t0 = time.Now()
		fk, err := c.Fork(ctx, snap, 8)
		if err != nil {
			return f, err
		}
		forks = append(forks, time.Since(t0))
		t0 = time.Now()
		err = fk.Sandboxes[0].Restore(ctx, snap)
		if err == nil {
			restores = append(restores, time.Since(t0))
		}
		_ = fk.DeleteAll(context.WithoutCancel(ctx))
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

// snapshotRows are the rows of the snapshot figures.
func snapshotRows(f *tbSnapFigures) []Row {
	var out []Row
	add := func(fig string, sr *series, note string) {
		if sr.samples() == 0 {
			return
		}
		p50, p99, runs := sr.latencyStats()
		out = append(out, Row{Section: "k8s-runc", Figure: fig, Kind: "latency", Unit: "ms", P50: p50, P99: p99,
			Samples: sr.samples(), Runs: len(runs), PerRun: runs, Note: note})
	}
	add("snapshot of a 10 MiB workspace volume", &f.snapshot,
		"SnapshotSandbox → READY: a SandboxSnapshot, its CSI VolumeSnapshot (the bed's hostpath driver copies the volume)")
	add("fork of 8 from a snapshot, all running", &f.fork8,
		"ForkSandbox count 8 → 8 pods Ready on PVCs made from the VolumeSnapshot (2-core node)")
	add("restore a fork to the snapshot", &f.restore,
		"RestoreSandbox → running: pod and PVC replaced, PVC made again from the VolumeSnapshot")
	return out
}
