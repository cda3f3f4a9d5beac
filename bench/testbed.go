package main

// The Kubernetes path with real pods: the node bed of
// hack/testbed (containerd, runc, gVisor) with sandpod installed from
// deploy/install.yaml, measured through the in-cluster bridge as a user
// reaches it (its Service, a token from its Secret), with the Go client and
// the Python client, and through the API (a SandboxClaim).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
)

// testbedParams size the real-pod suite: pod starts take seconds here, so
// sample counts are small and say so.
type testbedParams struct {
	WarmClaims int `json:"warm_claims"` // per runtime, Go client
	ColdStarts int `json:"cold_starts"` // per runtime: a cold claim and a bare pod each
	APIClaims  int `json:"api_claims"`  // SandboxClaim → Ready, runc
	PyClaims   int `json:"python_claims"`
	Execs      int `json:"execs"` // exec round trips per runtime
}

func testbedDefaults(quick bool) testbedParams {
	if quick {
		return testbedParams{WarmClaims: 5, ColdStarts: 3, APIClaims: 3, PyClaims: 5, Execs: 30}
	}
	return testbedParams{WarmClaims: 12, ColdStarts: 8, APIClaims: 8, PyClaims: 12, Execs: 200}
}

const (
	tbPythonImage = "ghcr.io/sandpod/python:3.11"
	tbGVisor      = "gvisor"
)

type testbedSuite struct {
	p        testbedParams
	kc       client.Client
	ns       string
	addr     string
	preview  string // the bridge Service's preview port
	token    string
	python   string // the venv's python, for the Python client figure
	sections map[string]*tbFigures
	cmp      map[string]*cmpFigures // against agent-sandbox (testbed_compare.go)
	cmpAsked bool                   // the comparison was asked for (-testbed-agent-sandbox)
	podWatch client.WithWatch       // noPods' client (testbed_podsgone.go)
	notes    []string
	failed   []string // parts that failed or were left out (fail)
	cfg      *rest.Config
}

type tbFigures struct {
	warm, cold, bare, exec, api, py series
	code, codeFirst                 series
	preview                         series
	get, patch                      series // the warm claim's floors (testbed_floors.go)
	// coldStages and bareStages: one series per interval of coldIntervals
	// and bareIntervals (testbed_timeline.go).
	coldStages, bareStages []series
	// Answers left out of a figure: warm claims that came back cold (Go
	// client, SandboxClaim path, Python client), cold claims served warm.
	warmCold, apiCold, pyCold, coldOut int
}

// runTestbedSuite measures the real-pod path when the node bed is up with
// sandpod installed. Without the bed the suite is skipped; a part that
// fails or is left out (other than by its flag) makes it stopped early:
// either fails the run (exitStatus).
func runTestbedSuite(ctx context.Context, rep *Report, kubeconfig, python string, quick bool) suiteOutcome {
	p := testbedDefaults(quick)
	s, err := newTestbedSuite(ctx, kubeconfig, python, p)
	if err != nil {
		why := fmt.Sprintf("%v (run `make node-bed-up`, then install with `make e2e` or kubectl apply deploy/install.yaml; or leave the suite out: -suites local,kwok)", err)
		rep.Notes = append(rep.Notes, "real pods (node bed): skipped: "+why)
		return suiteOutcome{Suite: "testbed", State: suiteSkipped, Why: []string{why}}
	}
	defer s.cleanup()
	t0 := time.Now()
	for _, rt := range []string{"runc", tbGVisor} {
		if err := s.runtime(ctx, rt); err != nil {
			s.fail(fmt.Sprintf("real pods, %s: stopped early", rt), err)
		}
	}
	if n := *testbedPodVariants; n > 0 {
		for _, rt := range []string{"runc", tbGVisor} {
			rows, err := s.podVariantRows(ctx, rt, n)
			if err != nil {
				s.fail(fmt.Sprintf("real pods, %s: pod spec variants", rt), err)
			}
			rep.Rows = append(rep.Rows, rows...)
		}
	}
	if err := s.apiClaims(ctx); err != nil {
		s.fail("real pods, SandboxClaim path", err)
	}
	if err := s.pythonClaims(ctx); err != nil {
		s.fail("real pods, Python client", err)
	}
	s.runCompare(ctx, kubeconfig)
	if !*testbedSnapshots {
		s.notes = append(s.notes, "real pods: snapshot rows skipped (-testbed-snapshots=false)")
	} else if f, err := s.snapshots(ctx, tbSnapRounds(quick)); err != nil {
		s.fail("real pods, snapshots (CSI StorageClass sandpod-csi)", err)
		if f != nil {
			rep.Rows = append(rep.Rows, snapshotRows(f)...)
		}
	} else {
		rep.Rows = append(rep.Rows, snapshotRows(f)...)
	}
	logf("real-pod suite took %s", time.Since(t0).Round(time.Second))
	rep.Rows = append(rep.Rows, s.rows()...)
	rep.Rows = append(rep.Rows, s.cmpRows()...)
	rep.Notes = append(rep.Notes, s.notes...)
	return outcomeOf("testbed", s.failed)
}

// fail records a part of the suite that failed: a note under the table and
// a reason for the run's exit status.
func (s *testbedSuite) fail(part string, err error) {
	msg := fmt.Sprintf("%s: %v", part, err)
	logf("%s", msg)
	s.notes = append(s.notes, msg)
	s.failed = append(s.failed, msg)
}

func newTestbedSuite(ctx context.Context, kubeconfig, python string, p testbedParams) (*testbedSuite, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, fmt.Errorf("no node bed kubeconfig at %s", kubeconfig)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 30 * time.Second
	// client-go's default client-side limit (5 requests/s, bursts of 10)
	// delayed the benchmark's own polls and the API-write floor by up to
	// 100 ms: the bed's API server is not what it measured then.
	cfg.QPS, cfg.Burst = 500, 1000
	// controller-runtime prints a stack on stderr when a client is made
	// 30 s after the start with no logger set (the watch clients are).
	ctrllog.SetLogger(logr.Discard())
	scheme, err := controller.NewScheme()
	if err != nil {
		return nil, err
	}
	kc, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	s := &testbedSuite{p: p, kc: kc, python: python, sections: map[string]*tbFigures{}, cfg: cfg}
	svc := &corev1.Service{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: "sandpod-system", Name: "sandpod-bridge"}, svc); err != nil {
		return nil, fmt.Errorf("bridge service: %w", err)
	}
	s.addr = fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	for _, p := range svc.Spec.Ports {
		if p.Name == "preview" {
			s.preview = fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, p.Port)
		}
	}
	sec := &corev1.Secret{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: "sandpod-system", Name: "sandpod-bridge-tokens"}, sec); err != nil {
		return nil, fmt.Errorf("bridge tokens: %w", err)
	}
	if f := strings.Fields(string(sec.Data["tokens"])); len(f) > 0 {
		s.token = f[0]
	}
	s.ns = fmt.Sprintf("bench-%d", time.Now().Unix())
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}); err != nil {
		return nil, err
	}
	return s, nil
}

// watchClient is a client for watches: without the suite client's 30 s
// timeout, which is the whole request's (an http.Client's), so it ends a
// watch 30 s in.
func (s *testbedSuite) watchClient() (client.WithWatch, error) {
	cfg := rest.CopyConfig(s.cfg)
	cfg.Timeout = 0
	return client.NewWithWatch(cfg, client.Options{Scheme: s.kc.Scheme()})
}

func (s *testbedSuite) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = s.kc.DeleteAllOf(ctx, &v1alpha1.SandboxWarmPool{}, client.InNamespace(s.ns))
	_ = s.kc.DeleteAllOf(ctx, &v1alpha1.SandboxClaim{}, client.InNamespace(s.ns))
	_ = s.kc.DeleteAllOf(ctx, &v1alpha1.Sandbox{}, client.InNamespace(s.ns))
	_ = s.kc.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})
}

func (s *testbedSuite) dial(ctx context.Context) (*sandpod.Client, error) {
	return sandpod.Dial(ctx, s.addr, sandpod.WithInsecure(), sandpod.WithToken(s.token), sandpod.WithNamespace(s.ns))
}

func tbPodSpec(runtime string) corev1.PodSpec {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: tbPythonImage, ImagePullPolicy: corev1.PullIfNotPresent}}}
	if runtime != "runc" {
		spec.RuntimeClassName = &runtime
	}
	return spec
}

func (s *testbedSuite) template(ctx context.Context, name, runtime string) error {
	return s.kc.Create(ctx, &v1alpha1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec:       v1alpha1.SandboxTemplateSpec{PodTemplate: corev1.PodTemplateSpec{Spec: tbPodSpec(runtime)}},
	})
}

func (s *testbedSuite) scalePool(ctx context.Context, name, template string, n int32) error {
	p := &v1alpha1.SandboxWarmPool{}
	err := s.kc.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, p)
	if err != nil {
		return s.kc.Create(ctx, &v1alpha1.SandboxWarmPool{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
			Spec:       v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: template}, Replicas: n},
		})
	}
	orig := p.DeepCopy()
	p.Spec.Replicas = n
	return s.kc.Patch(ctx, p, client.MergeFrom(orig)) // no resourceVersion: the controller writes status meanwhile
}

// waitFor polls (the benchmark's own pacing, not a measured path) until
// cond holds.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: timed out", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func (s *testbedSuite) poolReady(ctx context.Context, name string, n int32) error {
	return waitFor(ctx, 3*time.Minute, "pool "+name+" ready", func() bool {
		p := &v1alpha1.SandboxWarmPool{}
		return s.kc.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, p) == nil && p.Status.ReadyReplicas >= n
	})
}

// runtime measures one runtime: warm and cold claims and exec through the
// bridge, and a bare pod's start for comparison.
func (s *testbedSuite) runtime(ctx context.Context, rt string) error {
	f := &tbFigures{}
	s.sections[rt] = f
	tmpl := "bench-" + rt
	if err := s.template(ctx, tmpl, rt); err != nil {
		return err
	}
	c, err := s.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()

	// Warm: a full pool of WarmClaims ready members, then one claim every
	// 100 ms, in rounds that leave the pool at least half full: its refill
	// waits for the claims to stop (--pool-refill-delay), so each claim
	// meets an idle node, as a warm claim should. (A pool below half its
	// size refills after the delay, claims or not: one round of all 12
	// raced the refill's pod starts on this 2-core node from the 10th
	// claim on.) The connection is opened before the first claim.
	if err := s.scalePool(ctx, tmpl, tmpl, int32(s.p.WarmClaims)); err != nil {
		return err
	}
	if _, err := c.Templates(ctx); err != nil { // connects
		return err
	}
	var warm []time.Duration
	var keep *sandpod.Sandbox
	var claimed []*sandpod.Sandbox
	rounds := tbClaimRounds(s.p.WarmClaims)
	for i, n := range rounds {
		if err := s.refilled(ctx, tmpl, int32(s.p.WarmClaims), i > 0); err != nil {
			return err
		}
		var round []*sandpod.Sandbox
		for range n {
			time.Sleep(100 * time.Millisecond)
			t0 := time.Now()
			sb, err := c.Claim(ctx, tmpl)
			d := time.Since(t0)
			if err != nil {
				return err
			}
			if sb.Warm() {
				warm = append(warm, d)
			} else {
				f.warmCold++
			}
			round = append(round, sb)
		}
		if keep == nil {
			keep, round = round[0], round[1:]
		}
		claimed = round
		if i < len(rounds)-1 {
			// The node's CPU requests hold 2 pools of 12 and little more:
			// the refill must not wait for claimed pods.
			deleteAll(ctx, claimed)
		}
	}
	f.warm.addRun(ms(warm))
	logf("%s: warm claims (Go client), in order: %.1f ms", rt, ms(warm))
	// Before the last round's deletes: their pods' teardown would load
	// the node under the floors.
	if err := s.claimFloors(ctx, c, keep, f); err != nil {
		return fmt.Errorf("claim floors: %w", err)
	}
	deleteAll(ctx, claimed)

	// Exec round trip of `true` through the bridge to the agent in the pod.
	var execs []time.Duration
	for i := 0; i < s.p.Execs; i++ {
		t0 := time.Now()
		if _, err := keep.Run(ctx, "true"); err != nil {
			return err
		}
		execs = append(execs, time.Since(t0))
	}
	f.exec.addRun(ms(execs))
	if err := tbRunCode(ctx, keep, s.p.Execs, f); err != nil {
		return err
	}
	if err := s.previewGets(ctx, keep, s.p.Execs, f); err != nil {
		return fmt.Errorf("preview: %w", err)
	}
	_ = keep.Delete(ctx)

	// Cold: no pool; each claim starts a pod, timed against a bare pod.
	if err := s.scalePool(ctx, tmpl, tmpl, 0); err != nil {
		return err
	}
	if err := waitFor(ctx, 2*time.Minute, "pool drained", func() bool {
		var list v1alpha1.SandboxList
		return s.kc.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{v1alpha1.LabelPool: tmpl}) == nil && len(list.Items) == 0
	}); err != nil {
		return err
	}
	return s.coldStarts(ctx, c, tmpl, rt, f)
}

// apiClaims: the kubectl path, a SandboxClaim created → its Ready condition
// seen by a watch (warm, runc).
func (s *testbedSuite) apiClaims(ctx context.Context) error {
	f := s.sections["runc"]
	if f == nil {
		return nil
	}
	if err := s.scalePool(ctx, "bench-runc", "bench-runc", int32(s.p.APIClaims)); err != nil {
		return err
	}
	if err := s.poolReady(ctx, "bench-runc", int32(s.p.APIClaims)); err != nil {
		return err
	}
	wc, err := s.watchClient()
	if err != nil {
		return err
	}
	w, err := watchClaims(ctx, wc, s.ns, false)
	if err != nil {
		return err
	}
	defer w.stop()
	var lat []time.Duration
	for i := 0; i < s.p.APIClaims; i++ {
		c := &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: fmt.Sprintf("api-%d", i)},
			Spec: v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: "bench-runc"}}}
		t0 := time.Now()
		if err := s.kc.Create(ctx, c); err != nil {
			return err
		}
		cs, err := w.readyAt(ctx, prodSandpod, c.Name)
		if err != nil {
			return err
		}
		if !cs.warm {
			f.apiCold++
			continue
		}
		lat = append(lat, cs.ready.Sub(t0))
	}
	_ = s.kc.DeleteAllOf(ctx, &v1alpha1.SandboxClaim{}, client.InNamespace(s.ns))
	f.api.addRun(ms(lat))
	logf("runc: warm claims via the API (SandboxClaim → Ready, watched), in order: %.1f ms", ms(lat))
	return nil
}

// pythonClaims: warm claims through the bridge from the Python client, timed
// inside the Python process (bench/python_claims.py).
func (s *testbedSuite) pythonClaims(ctx context.Context) error {
	f := s.sections["runc"]
	if f == nil {
		return nil
	}
	if _, err := os.Stat(s.python); err != nil {
		return fmt.Errorf("no Python at %q (make venv)", s.python)
	}
	// Its refill holds the node's CPU requests: the later phases would wait
	// for them, also when a round failed.
	defer func() {
		if err := s.scalePool(context.WithoutCancel(ctx), "bench-runc", "bench-runc", 0); err != nil {
			s.fail("real pods, Python client: scale its pool to 0", err)
		}
	}()
	if err := s.scalePool(ctx, "bench-runc", "bench-runc", int32(s.p.PyClaims)); err != nil {
		return err
	}
	if err := s.poolReady(ctx, "bench-runc", int32(s.p.PyClaims)); err != nil {
		return err
	}
	var all []float64
	for i, n := range tbClaimRounds(s.p.PyClaims) { // as the Go client's (runtime)
		if err := s.refilled(ctx, "bench-runc", int32(s.p.PyClaims), i > 0); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, s.python, "bench/python_claims.py", "--address", s.addr, "--namespace", s.ns,
			"--template", "bench-runc", "--claims", fmt.Sprint(n))
		cmd.Env = append(os.Environ(), "SANDPOD_TOKEN="+s.token, "PYTHONPATH=clients/python")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("python_claims.py: %w", err)
		}
		var res struct {
			WarmMS []float64 `json:"warm_ms"`
			Cold   *int      `json:"cold"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return fmt.Errorf("python_claims.py output: %w", err)
		}
		if res.Cold == nil {
			return fmt.Errorf("python_claims.py output %q: no count of cold claims", out)
		}
		all = append(all, res.WarmMS...)
		f.pyCold += *res.Cold
	}
	f.py.addRun(all)
	logf("runc: warm claims (Python client), in order: %.1f ms", all)
	return nil
}

// refilled waits until pool has n ready members again after a round of
// claims (after: the pool's status may not show the round's claims yet, so
// first past the refill delay, 1 s by default), and the node has finished
// starting them.
func (s *testbedSuite) refilled(ctx context.Context, pool string, n int32, after bool) error {
	if after {
		time.Sleep(1500 * time.Millisecond)
	}
	if err := s.poolReady(ctx, pool, n); err != nil {
		return err
	}
	if after {
		time.Sleep(time.Second)
	}
	return nil
}

func deleteAll(ctx context.Context, sbs []*sandpod.Sandbox) {
	for _, sb := range sbs {
		_ = sb.Delete(ctx)
	}
}

// tbClaimRounds splits n warm claims from a pool of n into rounds that
// each leave the pool at least half full (lifecycle.RefillDue refills a
// pool below half its size after the delay even while claims go on), the
// benchmark waiting for the pool to be full again between rounds.
func tbClaimRounds(n int) []int {
	per := max(n/2, 1)
	var out []int
	for left := n; left > 0; left -= per {
		out = append(out, min(per, left))
	}
	return out
}

func (s *testbedSuite) rows() []Row {
	var out []Row
	lat := func(section, fig string, sr *series, target string, check func(p50, p99 float64) bool, note string) *Row {
		p50, p99, runs := sr.latencyStats()
		out = append(out, Row{Section: section, Figure: fig, Kind: "latency", Unit: "ms", P50: p50, P99: p99,
			Samples: sr.samples(), Runs: len(runs), PerRun: runs, Target: target, Note: note})
		r := &out[len(out)-1]
		if check != nil { // judged: stays in the table, missing, when it has no samples (settle)
			r.Met = boolp(check(p50, p99))
		}
		return r
	}
	// Pointers into out are used at once, before the next append moves it.
	leftOut := func(r *Row, n int, what string) { r.LeftOut, r.LeftOutWhat = n, what }
	for _, rt := range []string{"runc", tbGVisor} {
		f := s.sections[rt]
		if f == nil {
			continue
		}
		sec := "k8s-" + rt
		leftOut(lat(sec, "warm claim via the bridge (Go client)", &f.warm, "p50 ≤ 15 ms", func(p50, _ float64) bool { return p50 <= 15 },
			"ClaimSandbox → running sandbox: one patch of a ready pool member"), f.warmCold, "cold")
		bareP50, _, _ := f.bare.latencyStats()
		leftOut(lat(sec, "cold claim via the bridge (Go client)", &f.cold, fmt.Sprintf("≤ bare pod + 20 ms (%s)", fmtNum(bareP50+20, "ms")),
			func(p50, _ float64) bool { return p50 <= bareP50+20 }, "no pool: ClaimSandbox → pod Ready and agent serving"), f.coldOut, "warm")
		lat(sec, "bare pod start (same image, no sandpod)", &f.bare, "", nil, "Pod create call → Ready seen by a watch")
		for i, iv := range coldIntervals {
			if i < len(f.coldStages) {
				lat(sec, "cold claim, stage: "+iv.what, &f.coldStages[i], "", nil, "first seen by the benchmark's watches (testbed_timeline.go)")
			}
		}
		for i, iv := range bareIntervals {
			if i < len(f.bareStages) {
				lat(sec, "bare pod, stage: "+iv.what, &f.bareStages[i], "", nil, "first seen by the benchmark's watches")
			}
		}
		lat(sec, "exec round trip `true` via the bridge", &f.exec, "", nil, "Exec stream through the bridge to the agent in the pod")
		lat(sec, "run_code round trip `1+1`, warm context", &f.code, "p50 ≤ 10 ms", func(p50, _ float64) bool { return p50 <= 10 },
			"RunCode through the bridge to the agent and the context's python3 in the pod (Go client)")
		lat(sec, "first run_code in a sandbox", &f.codeFirst, "", nil, "starts the default context: python3 and the executor in the pod")
		lat(sec, "small GET through a preview URL", &f.preview, "", nil,
			"12-byte answer of a python handler in the pod, via the bridge Service's preview port (token auth) and the agent's Dial tunnel; keep-alive on both hops")
		lat(sec, "floor: GetSandbox via the bridge", &f.get, "", nil,
			"one unary RPC through the bridge Service to its informer cache and back, no API write: the warm claim's path without its patch")
		lat(sec, "floor: a Sandbox merge patch from the host", &f.patch, "", nil,
			"the benchmark's own merge patch of one annotation of a claimed Sandbox, straight to kube-apiserver: the write a warm claim makes, without the bridge")
		if rt != "runc" { // the SandboxClaim path and the Python client are measured on runc only
			continue
		}
		leftOut(lat(sec, "warm claim via the API (SandboxClaim → Ready)", &f.api, "", nil,
			"the kubectl path: claim reconciler adopts, then writes the claim's status; Ready seen by a watch"), f.apiCold, "cold")
		leftOut(lat(sec, "warm claim via the bridge (Python client)", &f.py, "p50 ≤ 15 ms", func(p50, _ float64) bool { return p50 <= 15 },
			"sandpod.Client.claim() timed in Python (bench/python_claims.py)"), f.pyCold, "cold")
	}
	return out
}

// tbRunCode times the first run_code in sb (it starts the default context)
// and then n warm `1+1` round trips.
func tbRunCode(ctx context.Context, sb *sandpod.Sandbox, n int, f *tbFigures) error {
	t0 := time.Now()
	if ex, err := sb.RunCode(ctx, "1+1"); err != nil || ex.Text() != "2" {
		return fmt.Errorf("first run_code: %v (%v)", err, ex)
	}
	f.codeFirst.addRun(ms([]time.Duration{time.Since(t0)}))
	var rt []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		ex, err := sb.RunCode(ctx, "1+1")
		if err != nil || ex.Text() != "2" {
			return fmt.Errorf("run_code: %v (%v)", err, ex)
		}
		rt = append(rt, time.Since(t0))
	}
	f.code.addRun(ms(rt))
	return nil
}

// previewGets times small GETs through a preview URL of sb: the bench app
// of the local suite (bench/preview.go) in the pod, reached through the
// bridge Service's preview port with the token, one at a time on one
// kept-alive connection.
func (s *testbedSuite) previewGets(ctx context.Context, sb *sandpod.Sandbox, n int, f *tbFigures) error {
	if s.preview == "" {
		return fmt.Errorf("the bridge Service has no preview port")
	}
	if _, err := sb.Files().WriteFile(ctx, "p.py", []byte(benchApp)); err != nil {
		return err
	}
	if res, err := sb.Run(ctx, "setsid python3 p.py >/dev/null 2>&1 </dev/null &"); err != nil || res.ExitCode != 0 {
		return fmt.Errorf("start the app: %v (%+v)", err, res)
	}
	ex, err := sb.ExposePort(ctx, 8000)
	if err != nil {
		return err
	}
	var d net.Dialer
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, s.preview)
		},
	}}
	get := func() (time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ex.URL+"p.txt", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		t0 := time.Now()
		r, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			return 0, fmt.Errorf("GET %s: %s", ex.URL, r.Status)
		}
		return time.Since(t0), err
	}
	for i := 0; i < 10; i++ { // warm-up: connections on both hops
		if _, err := get(); err != nil {
			return err
		}
	}
	var ds []time.Duration
	for i := 0; i < n; i++ {
		dt, err := get()
		if err != nil {
			return err
		}
		ds = append(ds, dt)
	}
	f.preview.addRun(ms(ds))
	return sb.UnexposePort(ctx, 8000)
}
