// The kwok suite's bridge phases: ClaimSandbox calls through the real
// `sandpod bridge` binary (its Kubernetes backend) into the same pool the
// SandboxClaim phases use, in bursts and open loop.

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// bridgeProc is the real `sandpod bridge` binary, as its own process (its
// RSS and CPU are its own), serving the bench namespace on loopback with no
// authentication, and a gRPC connection to it.
type bridgeProc struct {
	cmd     *exec.Cmd
	pid     int
	logPath string
	exited  chan struct{}
	conn    *grpc.ClientConn
	api     pb.SandboxServiceClient
}

func startBridgeProc(ctx context.Context, bin, kubeconfig, ns, logPath string, extra []string) (*bridgeProc, error) {
	addrFile := logPath + ".addr"
	_ = os.Remove(addrFile)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	b := &bridgeProc{logPath: logPath, exited: make(chan struct{})}
	args := append([]string{"bridge", "--kubeconfig", kubeconfig, "--namespaces", ns,
		"--listen", "127.0.0.1:0", "--address-file", addrFile}, extra...)
	b.cmd = exec.Command(bin, args...)
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := b.cmd.Start(); err != nil {
		return nil, err
	}
	b.pid = b.cmd.Process.Pid
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	// The address file is written once the informers have synced and the
	// listener is open.
	deadline := time.Now().Add(90 * time.Second)
	var addr []byte
	for {
		if addr, err = os.ReadFile(addrFile); err == nil && len(addr) > 0 {
			break
		}
		select {
		case <-b.exited:
			return b, fmt.Errorf("sandpod bridge exited during start:\n%s", tailFile(logPath, 30))
		case <-ctx.Done():
			return b, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return b, fmt.Errorf("sandpod bridge not listening within 90s:\n%s", tailFile(logPath, 30))
		}
	}
	if b.conn, err = grpc.NewClient(strings.TrimSpace(string(addr)), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return b, err
	}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(b.conn).Check(hctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return b, fmt.Errorf("sandpod bridge health: %v %v", h.GetStatus(), err)
	}
	b.api = pb.NewSandboxServiceClient(b.conn)
	return b, nil
}

func (b *bridgeProc) stop() {
	if b == nil || b.cmd == nil || b.cmd.Process == nil {
		return
	}
	if b.conn != nil {
		_ = b.conn.Close()
	}
	select {
	case <-b.exited:
		return
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(20 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
}

// bridgeFigures are what the bridge phases measured.
type bridgeFigures struct {
	burstLat, burstRate series
	open                map[float64]*series // by rate
	openN               map[float64]int
	critical            map[string][]float64 // "burst" or "open R/s" → per run, writes per claim on the critical path
	cpuPerClaim         map[string][]float64 // same keys → per run, bridge CPU ms per claim
	cold, late          int
	burstCold           int             // of cold: the bursts'
	openCold            map[float64]int // of cold: by open-loop rate
	peakRSS             float64         // MiB, VmHWM after the last bridge run
	rssAt               string
}

func newBridgeFigures() *bridgeFigures {
	return &bridgeFigures{open: map[float64]*series{}, openN: map[float64]int{}, openCold: map[float64]int{},
		critical: map[string][]float64{}, cpuPerClaim: map[string][]float64{}}
}

// withBridge starts the bridge for the bridge phases (once).
func (k *kwokSuite) withBridge(ctx context.Context) error {
	if k.bridge != nil {
		return nil
	}
	k.bridgeLog = filepath.Join(k.outDir, "kwok-bridge.log")
	_ = os.Remove(k.bridgeLog)
	var err error
	k.bridge, err = startBridgeProc(ctx, k.bin, k.env.Kubeconfig, k.ns, k.bridgeLog, k.p.BridgeArgs)
	return err
}

// claimCall is one ClaimSandbox call's outcome.
type claimCall struct {
	start, end time.Time
	name       string
	warm       bool
	err        error
}

func (k *kwokSuite) bridgeClaim(ctx context.Context, id string) claimCall {
	c := claimCall{start: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, k.p.ReadyWithin)
	defer cancel()
	resp, err := k.bridge.api.ClaimSandbox(cctx, &pb.ClaimSandboxRequest{Template: "warm", Namespace: k.ns, RequestId: id})
	c.end, c.err, c.warm, c.name = time.Now(), err, resp.GetWarm(), resp.GetSandbox().GetName()
	return c
}

// criticalWrites is the bridge's writes per claim between two counter
// snapshots taken around a run's calls: the adoption patches (refused ones
// included) and the creates of claims served cold. During a bridge run
// nothing else patches a Sandbox's metadata or spec (the controller writes
// status, and its refills are creates), so kube-apiserver's `sandboxes
// patch` counts are the bridge's.
func criticalWrites(a, b counters, n, cold int) float64 {
	patches := 0.0
	for key, d := range diffCounts(b.api, a.api) {
		if strings.HasPrefix(key, "sandboxes patch") {
			patches += d
		}
	}
	return (patches + float64(cold)) / float64(n)
}

// bridgeBurstRun sends BurstClaims ClaimSandbox calls at once from
// BurstWriters callers against a pool of as many ready members.
func (k *kwokSuite) bridgeBurstRun(ctx context.Context, r int) error {
	if err := k.withBridge(ctx); err != nil {
		return err
	}
	c0, cpu0, err := k.startRun(ctx)
	if err != nil {
		return err
	}
	var perf []*perfCapture
	if k.prof && r == 0 {
		perf = []*perfCapture{startPerf(k.bridge.pid, filepath.Join(k.outDir, "kwok-bridge-burst.perf.data"), "bridge, first bridge burst")}
		if pid, ok := bedProcs(k.env.Dir)["kube-apiserver"]; ok {
			perf = append(perf, startPerf(pid, filepath.Join(k.outDir, "kwok-apiserver-bridge-burst.perf.data"), "kube-apiserver, first bridge burst"))
		}
	}
	n := k.p.BurstClaims
	calls := make([]claimCall, n)
	t0 := time.Now()
	fanOut(n, k.p.BurstWriters, func(i int) {
		calls[i] = k.bridgeClaim(ctx, fmt.Sprintf("bb%d-%04d", r, i))
	})
	cpu1 := k.cpu()
	c1, err := k.counters(ctx)
	if err != nil {
		return err
	}
	for _, pc := range perf {
		k.Profiles = append(k.Profiles, pc.stop())
	}
	lat, last, cold, err := summarise(calls, t0)
	if err != nil {
		return fmt.Errorf("bridge burst: %w", err)
	}
	f := k.bridgeFig
	f.cold += cold
	f.burstCold += cold
	rate := float64(n) / last.Sub(t0).Seconds()
	f.burstRate.addRun([]float64{rate})
	f.burstLat.addRun(lat)
	f.critical["burst"] = append(f.critical["burst"], criticalWrites(c0, c1, n, cold))
	f.cpuPerClaim["burst"] = append(f.cpuPerClaim["burst"], 1000*cpuBetween(cpu0, cpu1).CPUSeconds["bridge"]/float64(n))
	_, hwm := memStatus(k.bridge.pid)
	total, _ := k.tr.counts()
	anon, file := rssParts(k.bridge.pid)
	f.peakRSS, f.rssAt = mibOf(hwm), fmt.Sprintf("after bridge burst %d, with %d sandboxes in its namespace (RSS then: %.1f MiB anonymous, %.1f MiB of files)", r+1, total, mibOf(anon), mibOf(file))
	k.addCPU(fmt.Sprintf("bridge burst run %d: %d ClaimSandbox calls, until the last answered", r+1, n), cpu0, &c0)
	k.log("kwok: bridge burst run %d: %d claims answered in %s: %.0f claims/s; p50 %.1f ms, p99 %.1f ms; %.2f writes per claim on the critical path; bridge CPU %.2f ms per claim; bridge peak RSS %.1f MiB (now %.1f anonymous, %.1f files)",
		r+1, n, last.Sub(t0).Round(time.Millisecond), rate, percentile(lat, 50), percentile(lat, 99),
		criticalWrites(c0, c1, n, cold), f.cpuPerClaim["burst"][len(f.cpuPerClaim["burst"])-1], f.peakRSS, mibOf(anon), mibOf(file))
	return k.afterRefill(ctx, "bridge", c0, cpu0, n)
}

// bridgeOpenRun sends ClaimSandbox calls on a fixed schedule at rate, each
// from its own goroutine whatever the earlier ones do, and times each from
// its scheduled send to its answer. A run is as long as WarmFor, or shorter
// when the pool could not hold it.
func (k *kwokSuite) bridgeOpenRun(ctx context.Context, r int, rate float64) error {
	if err := k.withBridge(ctx); err != nil {
		return err
	}
	c0, cpu0, err := k.startRun(ctx)
	if err != nil {
		return err
	}
	n := min(int(rate*k.p.WarmFor.Seconds()), k.p.PoolSize-50)
	interval := time.Duration(float64(time.Second) / rate)
	calls := make([]claimCall, n)
	sched := make([]time.Time, n)
	var wg sync.WaitGroup
	start := time.Now().Add(20 * time.Millisecond)
	for i := 0; i < n; i++ {
		sched[i] = start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(sched[i]))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			calls[i] = k.bridgeClaim(ctx, fmt.Sprintf("bo%d-%.0f-%04d", r, rate, i))
			calls[i].start = sched[i] // latency from the scheduled send
		}(i)
	}
	wg.Wait()
	cpu1 := k.cpu()
	c1, err := k.counters(ctx)
	if err != nil {
		return err
	}
	lat, _, cold, err := summarise(calls, start)
	if err != nil {
		return fmt.Errorf("bridge open loop at %.0f/s: %w", rate, err)
	}
	f := k.bridgeFig
	f.cold += cold
	f.openCold[rate] += cold
	if f.open[rate] == nil {
		f.open[rate] = &series{}
	}
	f.open[rate].addRun(lat)
	f.openN[rate] = n
	key := fmt.Sprintf("open %.0f/s", rate)
	f.critical[key] = append(f.critical[key], criticalWrites(c0, c1, n, cold))
	f.cpuPerClaim[key] = append(f.cpuPerClaim[key], 1000*cpuBetween(cpu0, cpu1).CPUSeconds["bridge"]/float64(n))
	k.addCPU(fmt.Sprintf("bridge open-loop run %d: %d ClaimSandbox calls at %.0f/s, until the last answered", r+1, n, rate), cpu0, &c0)
	k.log("kwok: bridge open-loop run %d at %.0f/s: p50 %.2f ms, p99 %.2f ms over %d claims; %.2f writes per claim on the critical path",
		r+1, rate, percentile(lat, 50), percentile(lat, 99), len(lat), criticalWrites(c0, c1, n, cold))
	return k.afterRefill(ctx, "bridge", c0, cpu0, n)
}

// summarise turns calls into latencies (ms) of the warm ones, the time the
// last one answered and how many were served cold; a failed call fails the
// run (no claim may be lost), and so does a sandbox handed out twice.
func summarise(calls []claimCall, t0 time.Time) (lat []float64, last time.Time, cold int, err error) {
	last = t0
	got := make(map[string]int, len(calls))
	for i, c := range calls {
		if c.err != nil {
			return nil, last, 0, fmt.Errorf("claim %d: %w", i, c.err)
		}
		if j, dup := got[c.name]; dup {
			return nil, last, 0, fmt.Errorf("sandbox %s handed out to claims %d and %d", c.name, j, i)
		}
		got[c.name] = i
		if c.end.After(last) {
			last = c.end
		}
		if !c.warm {
			cold++
			continue
		}
		lat = append(lat, float64(c.end.Sub(c.start))/float64(time.Millisecond))
	}
	return lat, last, cold, nil
}

func (k *kwokSuite) bridgeRows() []Row {
	f := k.bridgeFig
	if f == nil {
		return nil
	}
	sec := "kwok"
	var rows []Row
	perRun := func(xs []float64) []RunStat {
		out := make([]RunStat, 0, len(xs))
		for _, x := range xs {
			out = append(out, RunStat{Samples: 1, Value: x})
		}
		return out
	}
	if k.phase("bridge-burst") { // rows of a phase asked for stay, missing if it did not run
		var rates []float64
		for _, r := range f.burstRate.runs {
			rates = append(rates, r[0])
		}
		rate := median(rates)
		rows = append(rows, Row{Section: sec, Figure: fmt.Sprintf("bridge: burst of %d ClaimSandbox calls: claims per second", k.p.BurstClaims),
			Kind: "rate", Unit: "claims/s", P50: rate, Samples: f.burstLat.samples(), Runs: len(rates), PerRun: perRun(rates),
			Target: "≥ 500 claims/s", Met: boolp(rate >= 500), LeftOut: f.burstCold, LeftOutWhat: "cold",
			Note: fmt.Sprintf("the real `sandpod bridge` binary; %d calls with request ids from %d callers on one gRPC connection against %d ready members; calls ÷ (last answer − first send)", k.p.BurstClaims, k.p.BurstWriters, k.p.PoolSize)})
		p50, p99, runs := f.burstLat.latencyStats()
		rows = append(rows, Row{Section: sec, Figure: fmt.Sprintf("bridge: burst of %d ClaimSandbox calls: each call", k.p.BurstClaims),
			Kind: "latency", Unit: "ms", P50: p50, P99: p99, Samples: f.burstLat.samples(), Runs: len(runs), PerRun: runs,
			Target: "p99 ≤ 1 s", Met: boolp(p99 <= 1000), LeftOut: f.burstCold, LeftOutWhat: "cold",
			Note: "each call's send → its answer (the member is running when it answers)"})
	}
	var rates []float64
	if k.phase("bridge-open") {
		rates = k.p.BridgeRates
	}
	for _, rate := range rates {
		s := f.open[rate]
		if s == nil {
			s = &series{}
		}
		p50, p99, runs := s.latencyStats()
		rows = append(rows, Row{Section: sec, Figure: fmt.Sprintf("bridge: ClaimSandbox at %.0f claims/s, open loop", rate),
			Kind: "latency", Unit: "ms", P50: p50, P99: p99, Samples: s.samples(), Runs: len(runs), PerRun: runs,
			Target: "p50 ≤ 10 ms, p99 ≤ 50 ms", Met: boolp(p50 <= 10 && p99 <= 50), LeftOut: f.openCold[rate], LeftOutWhat: "cold",
			Note: fmt.Sprintf("%d calls per run, one every %.1f ms whatever the earlier ones do; latency from the scheduled send to the answer", f.openN[rate], 1000/rate)})
	}
	for _, key := range sortedKeys(f.critical) {
		xs := f.critical[key]
		v := median(xs)
		rows = append(rows, Row{Section: sec, Figure: "bridge: API writes on the critical path per claim, " + key,
			Kind: "count", Unit: "writes", P50: v, Samples: len(xs), Runs: len(xs), PerRun: perRun(xs),
			Target: "1", Met: boolp(v <= 1.005),
			Note: "kube-apiserver's `sandboxes patch` (every code: the adoption, and refused ones) while the calls ran, plus claims served cold (a create), ÷ calls"})
	}
	for _, key := range sortedKeys(f.cpuPerClaim) {
		xs := f.cpuPerClaim[key]
		rows = append(rows, Row{Section: sec, Figure: "bridge: CPU per claim, " + key,
			Kind: "count", Unit: "ms", P50: median(xs), Samples: len(xs), Runs: len(xs), PerRun: perRun(xs),
			Note: "the bridge process's CPU time (/proc/<pid>/stat utime+stime) from the first send to the last answer ÷ calls"})
	}
	if f.peakRSS > 0 || k.phase("bridge-open") || k.phase("bridge-burst") {
		n := 0
		if f.peakRSS > 0 {
			n = 1
		}
		rows = append(rows, Row{Section: sec, Figure: "bridge: peak RSS", Kind: "memory", Unit: "MiB", P50: f.peakRSS, Samples: n, Runs: n,
			Target: "≤ 100 MiB", Met: boolp(f.peakRSS <= 100 && n > 0),
			Note: "VmHWM of the `sandpod bridge` process, " + f.rssAt + " (it caches the namespace's sandboxes, templates and pools)"})
	}
	if runs := k.writes["bridge"]; len(runs) > 0 {
		byRes, total := medianWrites(runs)
		rows = append(rows, Row{Section: sec, Figure: "bridge: API writes per claim (with the refill it causes)",
			Kind: "count", Unit: "writes", P50: total, Samples: len(runs), Runs: len(runs),
			Note: "every writer, from before the calls until the pool has refilled, ÷ calls; by resource: " + fmtWrites(byRes)})
	}
	return rows
}
