package main

// sandpod side by side with agent-sandbox on the node bed (issue 21): the
// same image, runtime and command, a SandboxClaim of each → its Ready
// condition as a watch sees it (testbed_claimwatch.go), cold (no pool) and
// warm (a full pool of the same size each), the two interleaved claim by
// claim, their order alternating, each claim on an idle node: no pod
// starting or going away (a cold claim: no pod at all).

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

var testbedAgentSandbox = flag.Bool("testbed-agent-sandbox", true,
	"the testbed suite's claims side by side with agent-sandbox "+asbVersion+" (built by hack/agent-sandbox.sh; a few minutes of pod starts)")

// cmpPool is the size of each product's warm pool.
const cmpPool = 3

type cmpFigures struct {
	spCold, asbCold, spWarm, asbWarm series
	// Claims whose warmth was not the one asked for, left out of the
	// series of the same name: a cold claim served warm, a warm one cold.
	spColdOut, asbColdOut, spWarmOut, asbWarmOut int
}

// cmpSide is one product's claim path.
type cmpSide struct {
	prod  string
	claim func(ctx context.Context, name string) error
	// drop deletes the claim and its sandbox (the benchmark's, not timed).
	drop func(ctx context.Context, name, sandbox string) error
}

// cmpOrder alternates which product claims first in round i, so neither
// always follows the other's teardown.
func cmpOrder(i int) [2]int {
	if i%2 == 0 {
		return [2]int{0, 1}
	}
	return [2]int{1, 0}
}

// cmpPodSpec is both products' pod: the bench image and runtime, `sleep`
// (sandpod runs its agent in front of it), no grace period (a `sleep` as
// PID 1 ignores SIGTERM: each teardown would take the default 30 s).
func cmpPodSpec(rt string) corev1.PodSpec {
	spec := tbPodSpec(rt)
	spec.Containers[0].Command = []string{"sleep", "3600"}
	spec.TerminationGracePeriodSeconds = new(int64)
	return spec
}

// asbObject is an agent-sandbox object of kind in ns.
func asbObject(group, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(group + "/v1beta1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// asbPool is a SandboxWarmPool of template with n members. replicas is
// always written: its default is 1, and a cold claim needs a pool of 0.
func asbPool(ns, name, template string, n int64) *unstructured.Unstructured {
	return asbObject(asbExtGroup, "SandboxWarmPool", ns, name, map[string]any{
		"replicas": n, "sandboxTemplateRef": map[string]any{"name": template},
	})
}

// compare runs the comparison for each runtime the suite measured, with
// agent-sandbox running.
func (s *testbedSuite) compare(ctx context.Context, kc client.WithWatch) error {
	w, err := watchClaims(ctx, kc, s.ns, true)
	if err != nil {
		return err
	}
	defer w.stop()
	s.cmp = map[string]*cmpFigures{}
	for _, rt := range []string{"runc", tbGVisor} {
		if s.sections[rt] == nil {
			continue
		}
		f := &cmpFigures{}
		s.cmp[rt] = f
		if err := s.compareRuntime(ctx, kc, w, rt, f); err != nil {
			return fmt.Errorf("%s: %w", rt, err)
		}
	}
	return nil
}

func (s *testbedSuite) compareRuntime(ctx context.Context, kc client.WithWatch, w *claimWatch, rt string, f *cmpFigures) error {
	name := "cmp-" + rt
	spec := cmpPodSpec(rt)
	podSpec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		return err
	}
	objs := []client.Object{
		&v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
			Spec: v1alpha1.SandboxTemplateSpec{PodTemplate: corev1.PodTemplateSpec{Spec: spec}}},
		asbObject(asbExtGroup, "SandboxTemplate", s.ns, name, map[string]any{"podTemplate": map[string]any{"spec": podSpec}}),
		asbPool(s.ns, name+"-cold", name, 0),
	}
	for _, o := range objs {
		if err := kc.Create(ctx, o); err != nil {
			return err
		}
	}
	sides := [2]cmpSide{s.sandpodSide(kc, name), s.asbSide(kc, name+"-cold")}

	// Cold: no sandpod pool of the template, agent-sandbox's pool of 0;
	// no pod left before each claim.
	if err := s.cmpRound(ctx, w, sides, rt, "cold", [2]*series{&f.spCold, &f.asbCold}, [2]*int{&f.spColdOut, &f.asbColdOut}, s.noPods); err != nil {
		return err
	}
	// Warm: a pool of cmpPool each, both full and the node idle before
	// each claim.
	spPool := &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec: v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: name}, Replicas: cmpPool}}
	asbWarm := asbPool(s.ns, name+"-warm", name, cmpPool)
	for _, o := range []client.Object{spPool, asbWarm} {
		if err := kc.Create(ctx, o); err != nil {
			return err
		}
	}
	sides[1] = s.asbSide(kc, name+"-warm")
	settled := func(ctx context.Context) error { return s.podsSettled(ctx, 2*cmpPool) }
	if err := s.cmpRound(ctx, w, sides, rt, "warm", [2]*series{&f.spWarm, &f.asbWarm}, [2]*int{&f.spWarmOut, &f.asbWarmOut}, settled); err != nil {
		return err
	}
	// Pools first: a pool whose template went first would go on trying.
	for _, o := range []client.Object{asbWarm, spPool, objs[2], objs[1], objs[0]} {
		_ = client.IgnoreNotFound(kc.Delete(ctx, o))
	}
	return s.noPods(ctx)
}

// cmpRound times s.cmpClaims() claims of kind ("cold" or "warm") of each
// side, interleaved, after idle before each, into to; claims not served as
// kind says count in out, side by side.
func (s *testbedSuite) cmpRound(ctx context.Context, w *claimWatch, sides [2]cmpSide, rt, kind string, to [2]*series, out [2]*int, idle func(context.Context) error) error {
	var lat [2][]time.Duration
	for i := range s.cmpClaims() {
		for _, k := range cmpOrder(i) {
			if err := idle(ctx); err != nil {
				return err
			}
			d, ok, err := s.cmpClaim(ctx, w, sides[k], fmt.Sprintf("%s-%s-%d", rt, kind, i), kind == "warm", i == 0 && kind == "cold")
			if err != nil {
				return err
			}
			if ok {
				lat[k] = append(lat[k], d)
			} else {
				*out[k]++
			}
		}
	}
	for k := range sides {
		to[k].addRun(ms(lat[k]))
		logf("%s: %s SandboxClaim → Ready, %s, in order: %.1f ms", rt, kind, sides[k].prod, ms(lat[k]))
	}
	return nil
}

// cmpClaims is the number of claims of each kind per product and runtime.
func (s *testbedSuite) cmpClaims() int {
	return max(s.p.ColdStarts-2, 3) // 6, or 3 with -quick
}

// cmpClaim creates a claim of side, times it to Ready, and deletes it;
// ok is false when it was not served as wantWarm asks.
func (s *testbedSuite) cmpClaim(ctx context.Context, w *claimWatch, side cmpSide, name string, wantWarm, describe bool) (time.Duration, bool, error) {
	name = side.prod[:2] + "-" + name // sa-… / ag-…: two claims never share a name
	t0 := time.Now()
	if err := side.claim(ctx, name); err != nil {
		return 0, false, err
	}
	cs, err := w.readyAt(ctx, side.prod, name)
	if err != nil {
		return 0, false, err
	}
	if describe {
		s.describePod(ctx, side.prod, cs.sandbox)
	}
	if err := side.drop(ctx, name, cs.sandbox); err != nil {
		return 0, false, err
	}
	// Both name a sandbox's pod after it. Until it is gone the next
	// claim's wait could see a full, Ready set of pods, this one among them.
	if err := waitFor(ctx, podsGoneWithin, "pod "+cs.sandbox+" gone", func() bool {
		return apierrors.IsNotFound(s.kc.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: cs.sandbox}, &corev1.Pod{}))
	}); err != nil {
		return 0, false, err
	}
	return cs.ready.Sub(t0), cs.warm == wantWarm, nil
}

func (s *testbedSuite) sandpodSide(kc client.Client, template string) cmpSide {
	return cmpSide{
		prod: prodSandpod,
		claim: func(ctx context.Context, name string) error {
			return kc.Create(ctx, &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
				Spec: v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: template}}})
		},
		drop: func(ctx context.Context, name, sandbox string) error {
			err := kc.Delete(ctx, &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}})
			if err == nil && sandbox != "" {
				err = kc.Delete(ctx, &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: sandbox}})
			}
			return client.IgnoreNotFound(err)
		},
	}
}

func (s *testbedSuite) asbSide(kc client.Client, pool string) cmpSide {
	return cmpSide{
		prod: prodASB,
		claim: func(ctx context.Context, name string) error {
			return kc.Create(ctx, asbObject(asbExtGroup, "SandboxClaim", s.ns, name, map[string]any{
				"warmPoolRef": map[string]any{"name": pool},
			}))
		},
		drop: func(ctx context.Context, name, sandbox string) error {
			err := kc.Delete(ctx, asbObject(asbExtGroup, "SandboxClaim", s.ns, name, nil))
			if err == nil && sandbox != "" {
				err = kc.Delete(ctx, asbObject(asbGroup, "Sandbox", s.ns, sandbox, nil))
			}
			return client.IgnoreNotFound(err)
		},
	}
}

// runCompare installs agent-sandbox, compares, and removes it; a missing
// binary or an install that fails is a note, not a failure of the suite.
func (s *testbedSuite) runCompare(ctx context.Context, kubeconfig string) {
	if !*testbedAgentSandbox {
		s.notes = append(s.notes, "real pods: agent-sandbox comparison skipped (-testbed-agent-sandbox=false)")
		return
	}
	s.cmpAsked = true
	const part = "real pods, agent-sandbox comparison"
	bin, crds, err := asbLookup(ctx)
	if err != nil {
		s.fail(part, fmt.Errorf("not run: build it with hack/agent-sandbox.sh, or leave it out with -testbed-agent-sandbox=false (%w)", err))
		return
	}
	// Every claim of the comparison is timed on an idle node: what the
	// earlier phases left (a pool a failed phase did not scale down, pods
	// still going away) goes first.
	if err := s.clearNamespace(ctx); err != nil {
		s.fail(part+": not run: the earlier phases' pods did not go", err)
		return
	}
	a, err := startAgentSandbox(ctx, s.kc, bin, crds, kubeconfig, filepath.Join(profileDir, "agent-sandbox-controller.log"))
	if err != nil {
		s.fail(part+": not run", err)
		return
	}
	defer func() {
		if err := a.stop(); err != nil {
			s.fail("real pods, agent-sandbox: removing its CRDs", err)
		}
	}()
	// A client made after the CRDs: its REST mapper knows their groups.
	kc, err := s.watchClient()
	if err == nil {
		err = s.compare(ctx, kc)
	}
	if err != nil {
		s.fail(part+": stopped early", err)
	}
	s.asbCleanup(kc)
}

// asbCleanup deletes what the comparison left of agent-sandbox's objects
// while its controller still runs (finalizers), and waits for their pods.
func (s *testbedSuite) asbCleanup(kc client.Client) {
	if kc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, k := range []struct{ group, kind string }{
		{asbExtGroup, "SandboxClaim"}, {asbExtGroup, "SandboxWarmPool"}, {asbExtGroup, "SandboxTemplate"}, {asbGroup, "Sandbox"},
	} {
		u := asbObject(k.group, k.kind, s.ns, "", nil)
		_ = kc.DeleteAllOf(ctx, u, client.InNamespace(s.ns))
	}
	_ = kc.DeleteAllOf(ctx, &v1alpha1.SandboxClaim{}, client.InNamespace(s.ns))
	_ = kc.DeleteAllOf(ctx, &v1alpha1.SandboxWarmPool{}, client.InNamespace(s.ns))
	_ = s.noPods(ctx)
}

// cmpRows are the comparison's rows, for every runtime the suite measured
// when the comparison was asked for: a runtime it did not reach shows its
// judged row as missing.
func (s *testbedSuite) cmpRows() []Row {
	if !s.cmpAsked {
		return nil
	}
	var out []Row
	for _, rt := range []string{"runc", tbGVisor} {
		if s.sections[rt] == nil {
			continue
		}
		f := s.cmp[rt]
		if f == nil {
			f = &cmpFigures{}
		}
		sec := "k8s-" + rt
		asbCold, _, _ := f.asbCold.latencyStats()
		out = appendLatency(out, sec, "cold SandboxClaim → Ready: sandpod", &f.spCold, f.spColdOut, "warm",
			fmt.Sprintf("≤ agent-sandbox cold (%s)", fmtNum(asbCold, "ms")), func(p50 float64) bool { return f.asbCold.samples() > 0 && p50 <= asbCold },
			"no pool: a SandboxClaim created → its Ready condition seen by a watch; interleaved with agent-sandbox's, same image, runtime and `sleep`")
		out = appendLatency(out, sec, "cold SandboxClaim → Ready: agent-sandbox "+asbVersion, &f.asbCold, f.asbColdOut, "warm", "", nil,
			"its SandboxClaim of a SandboxWarmPool of 0 (the claim names a pool; an empty one starts the pool's SandboxTemplate cold)")
		out = appendLatency(out, sec, "warm SandboxClaim → Ready: sandpod", &f.spWarm, f.spWarmOut, "cold", "", nil,
			fmt.Sprintf("a full pool of %d and an idle node before each claim; watched", cmpPool))
		out = appendLatency(out, sec, "warm SandboxClaim → Ready: agent-sandbox "+asbVersion, &f.asbWarm, f.asbWarmOut, "cold", "", nil,
			fmt.Sprintf("its SandboxWarmPool of %d, full, idle node", cmpPool))
	}
	return out
}

// appendLatency adds a latency row of sr, with leftOut answers of kind what
// left out of it; settle drops it when it has no sample and no target.
func appendLatency(out []Row, section, fig string, sr *series, leftOut int, what, target string, check func(p50 float64) bool, note string) []Row {
	p50, p99, runs := sr.latencyStats()
	r := Row{Section: section, Figure: fig, Kind: "latency", Unit: "ms", P50: p50, P99: p99,
		Samples: sr.samples(), Runs: len(runs), PerRun: runs, Target: target, Note: note, LeftOut: leftOut, LeftOutWhat: what}
	if check != nil {
		r.Met = boolp(check(p50))
	}
	return append(out, r)
}
