package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// The Kubernetes-at-scale suite ("kwok" rows): the real `sandpod controller`
// binary against a real kube-apiserver + etcd, with nodes and pods simulated
// by kwok (hack/kube/harness). Flags are registered here so that main only
// has to pick the suites.
var (
	suitesFlag        = flag.String("suites", "local,kwok,testbed", "comma-separated suites to run: local (the local engine), kwok (the controller at scale on kube-apiserver + etcd + kwok), testbed (real pods on the hack/testbed cluster, when it is up with sandpod installed)")
	testbedKubeconfig = flag.String("testbed-kubeconfig", "_output/testbed/conf/admin.kubeconfig", "admin kubeconfig of the hack/testbed cluster (testbed suite)")
	testbedSnapshots  = flag.Bool("testbed-snapshots", true, "the testbed suite's snapshot, fork and restore rows (several minutes of pod starts on the bed)")
	kubeBinFlag       = flag.String("kube-bin", "", "kwok bed binaries (etcd, kube-apiserver, kwok); default $"+harness.EnvBin+", else `hack/kube/build.sh --print`")
	kwokSandboxes     = flag.Int("kwok-sandboxes", 0, "sandboxes in the cluster for the controller-memory figure (default 5000, 1000 with -quick)")
	kwokRate          = flag.Float64("kwok-rate", 50, "open-loop warm claim rate, claims/s")
	kwokWarmFor       = flag.Duration("kwok-warm-for", 0, "length of each open-loop warm claim run (default 4s, 2s with -quick)")
	kwokBurst         = flag.Int("kwok-burst", 0, "claims per burst, against a pool of as many ready members (default 500, 200 with -quick)")
	kwokBudget        = flag.Duration("kwok-budget", 0, "time after which the kwok suite stops growing the cluster for the memory figure and measures where it is (default 11m, 3m with -quick)")
	kwokCtrlArgs      = flag.String("kwok-controller-args", "", "extra flags for `sandpod controller`, space-separated (e.g. \"--kube-api-qps=1000 --kube-api-burst=2000\")")
	kwokBridgeArgs    = flag.String("kwok-bridge-args", "", "extra flags for `sandpod bridge`, space-separated (e.g. \"--pprof=127.0.0.1:6061\")")
	kwokKeepLogDir    = flag.Bool("kwok-keep", false, "keep the kwok bed directory (logs of etcd, kube-apiserver, kwok) after the run")
	kwokPhases        = flag.String("kwok-phases", "cold,warm,burst,bridge,scale", "comma-separated kwok phases to run: cold, warm (SandboxClaims open loop), burst (SandboxClaims), bridge (ClaimSandbox through `sandpod bridge`: open loop and bursts), bridge-open and bridge-burst alone, scale (the memory figure)")
	kwokBridgeRates   = flag.String("kwok-bridge-rates", "50,200", "comma-separated open-loop ClaimSandbox rates through the bridge, claims/s")
)

type suiteSet map[string]bool

func parseSuites(s string) (suiteSet, error) {
	out := suiteSet{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
		case "local", "kwok", "testbed":
			out[name] = true
		default:
			return nil, fmt.Errorf("unknown suite %q (want local, kwok, testbed)", name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no suite selected")
	}
	return out, nil
}

// kwokParams sizes one run of the kwok suite.
type kwokParams struct {
	Repeats        int           `json:"repeats"`
	KubeBin        string        `json:"kube_bin"`
	ControllerArgs []string      `json:"controller_args"`
	BridgeArgs     []string      `json:"bridge_args,omitempty"`
	PoolSize       int           `json:"pool_size"`
	WarmRate       float64       `json:"warm_claims_per_second"`
	WarmFor        time.Duration `json:"warm_run_length"`
	BurstClaims    int           `json:"burst_claims"`
	BurstWriters   int           `json:"burst_writers"`
	ColdPerRun     int           `json:"cold_claims_and_sandboxes_per_run"`
	Sandboxes      int           `json:"sandboxes_for_memory"`
	CreateRate     float64       `json:"scale_up_sandboxes_per_second"`
	MaxStarting    int           `json:"scale_up_max_not_running"`
	Budget         time.Duration `json:"budget"`
	Phases         []string      `json:"phases"`
	BridgeRates    []float64     `json:"bridge_claims_per_second"`
	// ReadyWithin bounds the wait for a run's claims after the last send;
	// later ones are counted at it.
	ReadyWithin time.Duration `json:"ready_within"`
}

func kwokDefaults(quick bool, repeats int) kwokParams {
	p := kwokParams{Repeats: 3, WarmRate: *kwokRate, WarmFor: 4 * time.Second, BurstClaims: 500, BurstWriters: 32,
		ColdPerRun: 30, Sandboxes: 5000, CreateRate: 150, MaxStarting: 200, Budget: 11 * time.Minute, ReadyWithin: 3 * time.Minute}
	if quick {
		p.Repeats, p.WarmFor, p.BurstClaims, p.ColdPerRun, p.Sandboxes, p.Budget = 2, 2*time.Second, 200, 10, 1000, 3*time.Minute
	}
	if repeats > 0 {
		p.Repeats = repeats
	}
	if *kwokWarmFor > 0 {
		p.WarmFor = *kwokWarmFor
	}
	if *kwokBurst > 0 {
		p.BurstClaims = *kwokBurst
	}
	if *kwokSandboxes > 0 {
		p.Sandboxes = *kwokSandboxes
	}
	if *kwokBudget > 0 {
		p.Budget = *kwokBudget
	}
	p.ControllerArgs = strings.Fields(*kwokCtrlArgs)
	p.BridgeArgs = strings.Fields(*kwokBridgeArgs)
	p.Phases = strings.Split(strings.ReplaceAll(*kwokPhases, " ", ""), ",")
	for _, f := range strings.Split(*kwokBridgeRates, ",") {
		if r, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil && r > 0 {
			p.BridgeRates = append(p.BridgeRates, r)
		}
	}
	// One pool serves the open-loop runs (never running dry: it holds a
	// whole run's claims) and the bursts.
	p.PoolSize = max(p.BurstClaims, int(p.WarmRate*p.WarmFor.Seconds())+50)
	return p
}

// kubeBinDir finds the kwok bed's binaries, or says why there are none.
func kubeBinDir(flagVal string) (string, error) {
	dir := flagVal
	if dir == "" {
		dir = os.Getenv(harness.EnvBin)
	}
	if dir == "" {
		out, err := exec.Command("hack/kube/build.sh", "--print").Output()
		if err != nil {
			return "", fmt.Errorf("hack/kube/build.sh --print: %v", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, f := range []string{"etcd", "kube-apiserver", "kwok", "kwok-stages.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return dir, fmt.Errorf("%s missing in %s (build the kwok bed with `hack/kube/build.sh`, or `make kwok-bed`)", f, dir)
		}
	}
	return dir, nil
}

// kwokSuite measures the controller at scale.
type kwokSuite struct {
	p      kwokParams
	bin    string // sandpod
	outDir string
	log    func(format string, args ...any)
	prof   bool

	env       *harness.Env
	cl        client.Client
	ns        string
	ctrl      *controllerProc
	ctrlLog   string
	bridge    *bridgeProc
	bridgeLog string
	bridgeFig *bridgeFigures
	tr        *tracker
	start     time.Time

	warm, burstLat, burstRate, coldPod, coldReady, sbPod, sbRun series

	warmLag                                  []float64 // generator lateness, ms
	warmCold, burstCold, warmLate, burstLate int
	writes                                   map[string][]map[string]float64 // kind → per run, per claim by "resource verb [code]"
	ctrlWrites                               map[string][]float64            // kind → per run, per claim
	CPU                                      []phaseCPU
	RSS                                      []rssPoint
	Restart                                  *rssPoint
	StartRSS                                 *rssPoint
	ScalePeakReset                           bool // VmHWM reset after RSS[0]: later peaks are the scale-up's
	ClaimsAtScale                            int  // SandboxClaims in the namespace when the scale-up started
	Timings                                  []timing
	Objects                                  map[string]objSize
	Caches                                   []cacheSize
	Profiles                                 []*perfCapture
	notes                                    []string
}

type phaseCPU struct {
	Phase string `json:"phase"`
	cpuUse
	// ControllerRequests is every request the controller's client sent in
	// the phase (its QPS limit covers them all), when counted.
	ControllerRequests float64 `json:"controller_requests,omitempty"`
}

type rssPoint struct {
	Sandboxes int     `json:"sandboxes"`
	RSSMiB    float64 `json:"rss_mib"`
	HWMMiB    float64 `json:"peak_rss_mib"`
	HeapMiB   float64 `json:"go_heap_inuse_mib,omitempty"`
	At        string  `json:"at"`
}

// cacheSize is the heap a list of one kind takes once decoded.
type cacheSize struct {
	Kind                    string  `json:"kind"`
	Objects                 int     `json:"objects"`
	MiB                     float64 `json:"mib"`
	WithoutManagedFieldsMiB float64 `json:"without_managed_fields_mib"`
	// AsCachedMiB: as the controller's cache holds them (controller.CachedForm).
	AsCachedMiB float64 `json:"as_cached_mib"`
}

type timing struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

type objSize struct {
	JSONBytes          int `json:"json_bytes"`
	ManagedFieldsBytes int `json:"managed_fields_bytes"`
}

func (k *kwokSuite) timed(phase string, t0 time.Time) {
	d := time.Since(t0)
	k.Timings = append(k.Timings, timing{Phase: phase, Seconds: math.Round(d.Seconds()*10) / 10})
	k.log("kwok: %s took %s (load %s)", phase, d.Round(100*time.Millisecond), loadavg())
}

func (k *kwokSuite) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	k.notes = append(k.notes, n)
	k.log("kwok: %s", n)
}

// runKwok runs the whole suite and always tears the kwok bed down.
func runKwok(ctx context.Context, p kwokParams, bin, outDir string, prof bool) (*kwokSuite, error) {
	k := &kwokSuite{p: p, bin: bin, outDir: outDir, log: logf, prof: prof, start: time.Now(),
		writes: map[string][]map[string]float64{}, ctrlWrites: map[string][]float64{}, bridgeFig: newBridgeFigures()}
	err := k.run(ctx)
	k.teardown()
	return k, err
}

func (k *kwokSuite) run(ctx context.Context) error {
	t0 := time.Now()
	if err := os.Setenv(harness.EnvBin, k.p.KubeBin); err != nil {
		return err
	}
	if *kwokKeepLogDir {
		_ = os.Setenv("SANDPOD_KEEP_TESTBED", "1")
	}
	env, err := harness.Start()
	if err != nil {
		return fmt.Errorf("kwok bed: %w", err)
	}
	k.env = env
	k.timed("kwok bed start (etcd, kube-apiserver, CRDs, kwok node)", t0)

	cfg := *env.Config
	cfg.QPS, cfg.Burst = 5000, 10000
	if k.cl, err = client.New(&cfg, client.Options{Scheme: env.Client.Scheme()}); err != nil {
		return err
	}
	k.ns = "bench"
	if err := k.cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.ns}}); err != nil {
		return err
	}
	if err := k.cl.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: k.ns}}); err != nil {
		return err
	}
	t0 = time.Now()
	_ = os.MkdirAll(k.outDir, 0o755)
	k.ctrlLog = filepath.Join(k.outDir, "kwok-controller.log")
	_ = os.Remove(k.ctrlLog)
	if k.ctrl, err = startController(ctx, k.bin, env.Kubeconfig, k.ctrlLog, k.p.ControllerArgs); err != nil {
		return err
	}
	if k.tr, err = newTracker(ctx, &cfg, k.cl, k.ns); err != nil {
		return err
	}
	time.Sleep(time.Second)
	rss, hwm := memStatus(k.ctrl.pid)
	k.StartRSS = &rssPoint{RSSMiB: mibOf(rss), HWMMiB: mibOf(hwm), At: "controller started, no sandboxes"}
	for _, name := range []string{"warm", "cold"} {
		if err := k.cl.Create(ctx, &v1alpha1.SandboxTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: name},
			Spec:       v1alpha1.SandboxTemplateSpec{PodTemplate: podTemplate()},
		}); err != nil {
			return err
		}
	}
	if err := k.cl.Create(ctx, &v1alpha1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: "pool"},
		Spec:       v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: "warm"}, Replicas: int32(k.p.PoolSize)},
	}); err != nil {
		return err
	}
	c0 := k.cpu()
	if err := k.waitIdle(ctx, 10*time.Minute); err != nil {
		return fmt.Errorf("pool fill: %w", err)
	}
	k.addCPU(fmt.Sprintf("pool fill (%d members)", k.p.PoolSize), c0, nil)
	k.timed(fmt.Sprintf("controller start and pool fill (%d members)", k.p.PoolSize), t0)

	// Cheap phases first, so the budget cuts the expensive ones: each phase
	// starts another run only while the suite is within its share of the
	// budget. The scale-up for the memory figure gets what the bridge
	// phases leave; they run last, on the grown cluster (the thousands of
	// sandboxes their claims leave behind would otherwise be in the
	// controller's memory figure), against the restarted controller.
	claims := []kwokPhase{
		{"cold", "cold claims and sandboxes", 0.15, k.coldRun},
		{"warm", "open-loop warm claims", 0.35, k.warmRun},
		{"burst", "bursts", 0.55, k.burstRun},
	}
	bridge := []kwokPhase{
		{"bridge-open", "bridge: open-loop ClaimSandbox calls", 0.85, k.bridgeOpenRuns},
		{"bridge-burst", "bridge: bursts of ClaimSandbox calls", 0.95, k.bridgeBurstRun},
	}
	if err := k.runPhases(ctx, claims); err != nil {
		return err
	}
	k.objectSizes(ctx)
	if k.phase("scale") {
		t0 = time.Now()
		if err := k.scale(ctx); err != nil {
			return fmt.Errorf("scale-up: %w", err)
		}
		k.timed("scale-up for the memory figure", t0)
		k.cacheSizes(ctx)
		t0 = time.Now()
		if err := k.restart(ctx); err != nil {
			return fmt.Errorf("controller restart: %w", err)
		}
		k.timed("controller restart with every sandbox", t0)
	}
	return k.runPhases(ctx, bridge)
}

// kwokPhase is one measured phase: up to Repeats runs while the suite is
// within share of its budget.
type kwokPhase struct {
	key   string
	name  string
	share float64
	run   func(context.Context, int) error
}

func (k *kwokSuite) runPhases(ctx context.Context, phases []kwokPhase) error {
	for _, ph := range phases {
		if !k.phase(ph.key) {
			continue
		}
		t0 := time.Now()
		done := 0
		for r := 0; r < k.p.Repeats; r++ {
			if r > 0 && !k.within(ph.share, ph.name, r) {
				break
			}
			if err := ph.run(ctx, r); err != nil {
				return fmt.Errorf("%s, run %d: %w", ph.name, r+1, err)
			}
			done++
		}
		k.timed(fmt.Sprintf("%s (%d runs, each after a full, idle pool)", ph.name, done), t0)
	}
	return nil
}

// bridgeReserve is the part of the budget the scale-up leaves for the
// bridge phases after it (their runs and refills took about 130 s at the
// default sizes, 35 s with -quick).
func (k *kwokSuite) bridgeReserve() time.Duration {
	if k.phase("bridge-open") || k.phase("bridge-burst") {
		return min(150*time.Second, k.p.Budget/5)
	}
	return 0
}

// phase says whether -kwok-phases selects the phase ("bridge" selects both
// bridge-open and bridge-burst).
func (k *kwokSuite) phase(key string) bool {
	group, _, _ := strings.Cut(key, "-")
	return slices.Contains(k.p.Phases, key) || slices.Contains(k.p.Phases, group)
}

// bridgeOpenRuns is one open-loop bridge run at each of BridgeRates.
func (k *kwokSuite) bridgeOpenRuns(ctx context.Context, r int) error {
	for _, rate := range k.p.BridgeRates {
		if err := k.bridgeOpenRun(ctx, r, rate); err != nil {
			return err
		}
	}
	return nil
}

// startProfiles records the controller and kube-apiserver with perf.
func (k *kwokSuite) startProfiles(tag, what string) []*perfCapture {
	out := []*perfCapture{startPerf(k.ctrl.pid, filepath.Join(k.outDir, "kwok-controller-"+tag+".perf.data"), "controller, "+what)}
	if pid, ok := bedProcs(k.env.Dir)["kube-apiserver"]; ok {
		out = append(out, startPerf(pid, filepath.Join(k.outDir, "kwok-apiserver-"+tag+".perf.data"), "kube-apiserver, "+what))
	}
	return out
}

// within says whether the suite is still within share of its budget, and
// notes the runs of a phase it skips when not.
func (k *kwokSuite) within(share float64, phase string, done int) bool {
	limit := time.Duration(share * float64(k.p.Budget))
	if time.Since(k.start) < limit {
		return true
	}
	k.note("%s: %d of %d runs, the rest skipped: the suite was past %.0f%% of its budget (-kwok-budget %s) when the next would start", phase, done, k.p.Repeats, 100*share, k.p.Budget)
	return false
}

// teardown stops the controller and the kwok bed; the objects go with etcd's
// data directory, so nothing is deleted one by one.
func (k *kwokSuite) teardown() {
	t0 := time.Now()
	if k.tr != nil {
		k.tr.stop()
	}
	k.bridge.stop()
	k.ctrl.stop()
	if k.env != nil {
		k.env.Stop()
	}
	if k.env != nil || k.ctrl != nil {
		k.timed("teardown (stop controller, kwok, kube-apiserver, etcd; remove data)", t0)
	}
}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Image: "python:3.13-slim"}},
	}}
}

func (k *kwokSuite) newClaim(name, tmpl string) *v1alpha1.SandboxClaim {
	return &v1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: name},
		Spec:       v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: tmpl}},
	}
}

func (k *kwokSuite) newSandbox(name string) *v1alpha1.Sandbox {
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: name},
		Spec:       v1alpha1.SandboxSpec{PodTemplate: podTemplate()},
	}
}

// cpu snapshots the CPU of the kwok bed's processes, the controller and the
// benchmark itself.
func (k *kwokSuite) cpu() cpuSnap {
	pids := bedProcs(k.env.Dir)
	// The controller and the bridge name the kwok bed's kubeconfig too:
	// count them under their roles, not as "sandpod".
	own := map[string]int{}
	if k.ctrl != nil {
		own["controller"] = k.ctrl.pid
	}
	if k.bridge != nil {
		own["bridge"] = k.bridge.pid
	}
	for role, p := range own {
		for name, pid := range pids {
			if pid == p {
				delete(pids, name)
			}
		}
		pids[role] = p
	}
	pids["bench"] = os.Getpid()
	return takeCPU(pids)
}

// addCPU records the CPU of a phase; ctrlFrom, when not nil, is the
// controller's request count at its start.
func (k *kwokSuite) addCPU(phase string, from cpuSnap, ctrlFrom *counters) {
	u := cpuBetween(from, k.cpu())
	pc := phaseCPU{Phase: phase, cpuUse: u}
	if ctrlFrom != nil {
		if ms, err := k.ctrl.scrape(); err == nil {
			pc.ControllerRequests = clientRequests(ms) - ctrlFrom.all
		}
	}
	k.CPU = append(k.CPU, pc)
	k.log("kwok: %s", pc)
}

func (pc phaseCPU) String() string {
	s := pc.Phase + ": " + pc.cpuUse.String()
	if pc.ControllerRequests > 0 && pc.Seconds > 0 {
		s += fmt.Sprintf("; the controller sent %.0f requests (%.0f/s)", pc.ControllerRequests, pc.ControllerRequests/pc.Seconds)
	}
	return s
}

// waitIdle waits until the pool is full (every member ready, none starting)
// and the controller's work queues are empty, so what follows is measured
// without a refill in the background.
func (k *kwokSuite) waitIdle(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		pool := &v1alpha1.SandboxWarmPool{}
		if err := k.cl.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: "pool"}, pool); err != nil {
			return err
		}
		depth := -1.0
		if ms, err := k.ctrl.scrape(); err == nil {
			depth = ms.sum("workqueue_depth", nil)
		}
		want := pool.Spec.Replicas
		if pool.Status.ReadyReplicas == want && pool.Status.Replicas == want && pool.Status.ObservedGeneration == pool.Generation && depth == 0 {
			return nil
		}
		last = fmt.Sprintf("pool %d/%d ready (%d members), controller queue depth %.0f", pool.Status.ReadyReplicas, want, pool.Status.Replicas, depth)
		if time.Now().After(deadline) {
			return fmt.Errorf("not idle after %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-k.ctrl.exited:
			return fmt.Errorf("controller exited:\n%s", tailFile(k.ctrlLog, 30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitQuiet waits until the controller's work queues are empty.
func (k *kwokSuite) waitQuiet(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ms, err := k.ctrl.scrape()
		if err == nil && ms.sum("workqueue_depth", nil) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("controller queues not empty after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// counters is what the API server and the controller had counted at one time.
type counters struct {
	api  map[string]float64
	ctrl float64 // the controller's writes
	all  float64 // every request of the controller
}

func (k *kwokSuite) counters(ctx context.Context) (counters, error) {
	body, err := k.env.Clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return counters{}, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	c := counters{api: apiWrites(parseProm(string(body), map[string]bool{"apiserver_request_total": true}))}
	ms, err := k.ctrl.scrape()
	if err != nil {
		return c, err
	}
	c.ctrl, c.all = clientWrites(ms), clientRequests(ms)
	return c, nil
}

// recordWrites stores the writes of n claims between two counter snapshots.
func (k *kwokSuite) recordWrites(kind string, a, b counters, n int) {
	per := map[string]float64{}
	for key, d := range diffCounts(b.api, a.api) {
		per[key] = d / float64(n)
	}
	k.writes[kind] = append(k.writes[kind], per)
	k.ctrlWrites[kind] = append(k.ctrlWrites[kind], (b.ctrl-a.ctrl)/float64(n))
}

// runKwokSuite runs the kwok suite when the kwok bed's binaries exist and
// adds its rows and notes to rep (a note says why when it is skipped). It
// returns false when the suite ran and failed; its finished rows are kept.
func runKwokSuite(ctx context.Context, rep *Report, quick bool, repeats int, bin, out string, prof bool) (*kwokDetails, suiteOutcome) {
	p := kwokDefaults(quick, repeats)
	dir, err := kubeBinDir(*kubeBinFlag)
	if err != nil {
		n := "kwok rows skipped: " + err.Error() + " (or leave the suite out: -suites local,testbed)"
		logf("%s", n)
		rep.Notes = append(rep.Notes, n)
		return &kwokDetails{Params: p, Skipped: err.Error()}, suiteOutcome{Suite: "kwok", State: suiteSkipped, Why: []string{err.Error()}}
	}
	p.KubeBin = dir
	logf("kwok suite: kwok bed from %s; controller %s %s", dir, bin, strings.Join(p.ControllerArgs, " "))
	t0 := time.Now()
	k, err := runKwok(ctx, p, bin, out, prof)
	rep.Rows = append(rep.Rows, k.rows()...)
	rep.Notes = append(rep.Notes, k.allNotes()...)
	logf("kwok suite took %s (load %s)", time.Since(t0).Round(time.Second), loadavg())
	if err != nil {
		n := fmt.Sprintf("kwok suite stopped early: %v (its rows are from what finished; controller log: %s)", err, k.ctrlLog)
		logf("%s", n)
		if k.ctrlLog != "" {
			logf("controller log tail:\n%s", tailFile(k.ctrlLog, 20))
		}
		rep.Notes = append(rep.Notes, n)
		return k.details(), outcomeOf("kwok", []string{fmt.Sprintf("stopped early: %v", err)})
	}
	return k.details(), outcomeOf("kwok", nil)
}

func (d *kwokDetails) printProfiles() {
	for _, pc := range d.Profiles {
		fmt.Printf("\n%s — perf record (%s), self time by symbol:\n```\n%s\n```\n", pc.What, pc.File, pc.Top)
		if pc.Err != "" {
			fmt.Printf("perf error: %s\n", pc.Err)
		}
	}
}
