// The kwok suite's measured phases: warm claims at a fixed rate, bursts,
// cold claims, and the scale-up for the controller's memory figure.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lowmem"
)

// startRun waits for a full, idle pool and takes the API write counters
// and the CPU a run is measured from.
func (k *kwokSuite) startRun(ctx context.Context) (counters, cpuSnap, error) {
	if err := k.waitIdle(ctx, 5*time.Minute); err != nil {
		return counters{}, cpuSnap{}, err
	}
	c0, err := k.counters(ctx)
	if err != nil {
		return counters{}, cpuSnap{}, err
	}
	return c0, k.cpu(), nil
}

// recordWritesSince records the API writes per claim of a run of n claims
// that started at c0.
func (k *kwokSuite) recordWritesSince(ctx context.Context, kind string, c0 counters, n int) error {
	c1, err := k.counters(ctx)
	if err != nil {
		return err
	}
	k.recordWrites(kind, c0, c1, n)
	return nil
}

// afterRefill waits until the pool has refilled behind a run of n warm
// claims, then records the run's API writes per claim, the refill's
// included, and logs the CPU each process spent per claim over the same
// window (from cpu0): unlike latency, a count and a CPU time hold on a
// machine other work shares.
func (k *kwokSuite) afterRefill(ctx context.Context, kind string, c0 counters, cpu0 cpuSnap, n int) error {
	if err := k.waitIdle(ctx, 5*time.Minute); err != nil {
		return fmt.Errorf("refill: %w", err)
	}
	u := cpuBetween(cpu0, k.cpu())
	var parts []string
	for _, p := range sortedKeys(u.CPUSeconds) {
		parts = append(parts, fmt.Sprintf("%s %.2f ms", p, 1000*u.CPUSeconds[p]/float64(n)))
	}
	k.note("%s run of %d claims with its refill: CPU per claim: %s (%.1f s wall)", kind, n, strings.Join(parts, ", "), u.Seconds)
	return k.recordWritesSince(ctx, kind, c0, n)
}

// warmRun issues claims on a fixed schedule (open loop: the i-th claim is
// sent at start + i/rate whether or not earlier ones are Ready) against a
// full pool that holds the whole run, and times each from its scheduled
// send to Ready seen by the watch.
func (k *kwokSuite) warmRun(ctx context.Context, r int) error {
	c0, cpu0, err := k.startRun(ctx)
	if err != nil {
		return err
	}
	var perf []*perfCapture
	if k.prof && r == 0 {
		perf = k.startProfiles("warm", "first open-loop warm run")
	}
	n := int(k.p.WarmRate * k.p.WarmFor.Seconds())
	interval := time.Duration(float64(time.Second) / k.p.WarmRate)
	chans := make([]chan time.Time, n)
	sched := make([]time.Time, n)
	lags := make([]float64, n)
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now().Add(20 * time.Millisecond)
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		name := fmt.Sprintf("w%d-%04d", r, i)
		chans[i], sched[i] = k.tr.expect("claim", name), at
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lags[i] = float64(time.Since(at)) / float64(time.Millisecond)
			if err := k.cl.Create(ctx, k.newClaim(name, "warm")); err != nil {
				failed.Store(fmt.Errorf("create claim %s: %w", name, err))
			}
		}(i)
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	var lat []float64
	deadline := time.Now().Add(k.p.ReadyWithin)
	late := 0
	for i, ch := range chans {
		at, err := wait(ctx, ch, time.Until(deadline))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			// Not Ready in time: counted at the deadline, a lower bound.
			late++
			lat = append(lat, float64(deadline.Sub(sched[i]))/float64(time.Millisecond))
			continue
		}
		if !k.tr.warm(fmt.Sprintf("w%d-%04d", r, i)) {
			k.warmCold++
			continue
		}
		lat = append(lat, float64(at.Sub(sched[i]))/float64(time.Millisecond))
	}
	if late > 0 {
		k.warmLate += late
		k.note("warm run %d: %d of %d claims were not Ready %s after the last send; each is counted at that deadline (a lower bound)", r+1, late, n, k.p.ReadyWithin)
	}
	for _, pc := range perf {
		k.Profiles = append(k.Profiles, pc.stop())
	}
	k.warm.addRun(lat)
	k.warmLag = append(k.warmLag, lags...)
	k.addCPU(fmt.Sprintf("warm run %d: %d claims at %.0f/s, until the last is Ready", r+1, n, k.p.WarmRate), cpu0, &c0)
	k.log("kwok: warm run %d: p50 %.2f ms, p99 %.2f ms over %d warm claims", r+1, percentile(lat, 50), percentile(lat, 99), len(lat))
	return k.afterRefill(ctx, "warm", c0, cpu0, n)
}

// burstRun creates BurstClaims claims at once from BurstWriters goroutines
// against a pool of as many ready members.
func (k *kwokSuite) burstRun(ctx context.Context, r int) error {
	c0, cpu0, err := k.startRun(ctx)
	if err != nil {
		return err
	}
	var perf []*perfCapture
	if k.prof && r == 0 {
		perf = k.startProfiles("burst", "first burst")
	}
	n := k.p.BurstClaims
	chans := make([]chan time.Time, n)
	names := make([]string, n)
	starts := make([]time.Time, n)
	for i := range chans {
		names[i] = fmt.Sprintf("b%d-%04d", r, i)
		chans[i] = k.tr.expect("claim", names[i])
	}
	var failed atomic.Value
	t0 := time.Now()
	fanOut(n, k.p.BurstWriters, func(i int) {
		starts[i] = time.Now()
		if err := k.cl.Create(ctx, k.newClaim(names[i], "warm")); err != nil {
			failed.Store(fmt.Errorf("create claim %s: %w", names[i], err))
		}
	})
	created := time.Since(t0)
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	last := t0
	var lat []float64
	deadline := time.Now().Add(k.p.ReadyWithin)
	late := 0
	for i, ch := range chans {
		at, err := wait(ctx, ch, time.Until(deadline))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			late++
			at = deadline // a lower bound
		}
		if at.After(last) {
			last = at
		}
		if !k.tr.warm(names[i]) {
			k.burstCold++
		}
		lat = append(lat, float64(at.Sub(starts[i]))/float64(time.Millisecond))
	}
	for _, pc := range perf {
		k.Profiles = append(k.Profiles, pc.stop())
	}
	if late > 0 {
		k.burstLate += late
		k.note("burst run %d: %d of %d claims were not Ready %s after the last create; each is counted at that deadline, so the rate is an upper bound", r+1, late, n, k.p.ReadyWithin)
	}
	rate := float64(n) / last.Sub(t0).Seconds()
	k.burstRate.addRun([]float64{rate})
	k.burstLat.addRun(lat)
	k.addCPU(fmt.Sprintf("burst run %d: %d claims, until the last is Ready", r+1, n), cpu0, &c0)
	k.log("kwok: burst run %d: %d claims created in %s, all Ready after %s: %.0f claims/s; p50 %.1f ms, p99 %.1f ms",
		r+1, n, created.Round(time.Millisecond), last.Sub(t0).Round(time.Millisecond), rate, percentile(lat, 50), percentile(lat, 99))
	return k.afterRefill(ctx, "burst", c0, cpu0, n)
}

// coldRun makes ColdPerRun claims on a template without a pool, then as
// many Sandboxes directly, one after another, and times each to its pod's
// creation (the controller's share) and to Ready/Running (kwok included).
func (k *kwokSuite) coldRun(ctx context.Context, r int) error {
	c0, cpu0, err := k.startRun(ctx)
	if err != nil {
		return err
	}
	var pod, ready []float64
	for i := 0; i < k.p.ColdPerRun; i++ {
		name := fmt.Sprintf("c%d-%03d", r, i)
		chPod, chReady := k.tr.expect("pod", name), k.tr.expect("claim", name)
		t0 := time.Now()
		if err := k.cl.Create(ctx, k.newClaim(name, "cold")); err != nil {
			return err
		}
		pAt, err := wait(ctx, chPod, time.Minute)
		if err != nil {
			return fmt.Errorf("pod of claim %s: %w", name, err)
		}
		rAt, err := wait(ctx, chReady, time.Minute)
		if err != nil {
			return fmt.Errorf("claim %s: %w", name, err)
		}
		pod = append(pod, float64(pAt.Sub(t0))/float64(time.Millisecond))
		ready = append(ready, float64(rAt.Sub(t0))/float64(time.Millisecond))
	}
	if err := k.waitQuiet(ctx, time.Minute); err != nil {
		return err
	}
	if err := k.recordWritesSince(ctx, "cold", c0, k.p.ColdPerRun); err != nil {
		return err
	}
	k.coldPod.addRun(pod)
	k.coldReady.addRun(ready)

	var sbPod, sbRun []float64
	for i := 0; i < k.p.ColdPerRun; i++ {
		name := fmt.Sprintf("s%d-%03d", r, i)
		chPod, chRun := k.tr.expect("pod", name), k.tr.expect("sandbox", name)
		t0 := time.Now()
		if err := k.cl.Create(ctx, k.newSandbox(name)); err != nil {
			return err
		}
		pAt, err := wait(ctx, chPod, time.Minute)
		if err != nil {
			return fmt.Errorf("pod of sandbox %s: %w", name, err)
		}
		rAt, err := wait(ctx, chRun, time.Minute)
		if err != nil {
			return fmt.Errorf("sandbox %s: %w", name, err)
		}
		sbPod = append(sbPod, float64(pAt.Sub(t0))/float64(time.Millisecond))
		sbRun = append(sbRun, float64(rAt.Sub(t0))/float64(time.Millisecond))
	}
	k.sbPod.addRun(sbPod)
	k.sbRun.addRun(sbRun)
	k.addCPU(fmt.Sprintf("cold run %d: %d claims + %d sandboxes, one at a time", r+1, k.p.ColdPerRun, k.p.ColdPerRun), cpu0, &c0)
	k.log("kwok: cold run %d: claim→pod p50 %.1f ms, claim→Ready p50 %.1f ms, sandbox→pod p50 %.1f ms",
		r+1, percentile(pod, 50), percentile(ready, 50), percentile(sbPod, 50))
	return nil
}

// objectSizes records how big the objects the controller caches are, and
// how much of that is managedFields.
func (k *kwokSuite) objectSizes(ctx context.Context) {
	k.Objects = map[string]objSize{}
	size := func(kind string, obj client.Object, name string) {
		if err := k.cl.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: name}, obj); err != nil {
			return
		}
		all, _ := json.Marshal(obj)
		mf, _ := json.Marshal(obj.GetManagedFields())
		k.Objects[kind] = objSize{JSONBytes: len(all), ManagedFieldsBytes: len(mf)}
	}
	name := "s0-000"
	size("sandbox", &v1alpha1.Sandbox{}, name)
	size("pod", &corev1.Pod{}, name)
	size("secret", &corev1.Secret{}, name+"-agent")
	size("claim", &v1alpha1.SandboxClaim{}, "w0-0000")
}

// cacheSizes estimates what the controller's informer caches hold: it lists
// each cached kind of the namespace into Go structs in this process and
// reads the heap before and after, then again without managedFields.
func (k *kwokSuite) cacheSizes(ctx context.Context) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, c := range []struct {
		kind string
		list client.ObjectList
	}{
		{"sandboxes", &v1alpha1.SandboxList{}},
		{"pods", &corev1.PodList{}},
		{"secrets", &corev1.SecretList{}},
		{"claims", &v1alpha1.SandboxClaimList{}},
	} {
		h0 := heap()
		if err := k.cl.List(ctx, c.list, client.InNamespace(k.ns)); err != nil {
			k.log("kwok: cache size of %s: %v", c.kind, err)
			continue
		}
		h1 := heap()
		n := meta.LenList(c.list)
		_ = meta.EachListItem(c.list, func(o apiruntime.Object) error {
			if mo, ok := o.(metav1.Object); ok {
				mo.SetManagedFields(nil)
			}
			return nil
		})
		h2 := heap()
		// Then as the controller's cache holds them (its transforms).
		cached := make([]client.Object, 0, n)
		_ = meta.EachListItem(c.list, func(o apiruntime.Object) error {
			if co, ok := o.(client.Object); ok {
				if cf := lowmem.CachedForm(co); cf != nil {
					cached = append(cached, cf)
				}
			}
			return nil
		})
		_ = meta.SetList(c.list, nil)
		h3 := heap()
		runtime.KeepAlive(cached)
		if n == 0 {
			continue
		}
		cs := cacheSize{Kind: c.kind, Objects: n, MiB: mibOf(int64(h1 - h0)), WithoutManagedFieldsMiB: mibOf(int64(h2 - h0)), AsCachedMiB: mibOf(int64(h3 - h0))}
		k.Caches = append(k.Caches, cs)
		k.log("kwok: %d %s take %.1f MiB as Go structs (%.1f KiB each), %.1f MiB without managedFields, %.1f MiB as the controller caches them", n, c.kind, cs.MiB, cs.MiB*1024/float64(n), cs.WithoutManagedFieldsMiB, cs.AsCachedMiB)
	}
}

// scale grows the namespace to Sandboxes sandboxes with direct creates at a
// bounded rate (and a bound on how many are not Running yet), reading the
// controller's RSS and peak RSS at every thousand. When the suite's budget
// runs out it stops creating, lets what it made start, and measures there.
func (k *kwokSuite) scale(ctx context.Context) error {
	if err := k.waitQuiet(ctx, 2*time.Minute); err != nil {
		return err
	}
	k.rssPoint(ctx, "before scale-up")
	// The peak so far is the earlier phases' (the bursts set it); from here
	// VmHWM is the scale-up's own, the figure the target names (the
	// controller with N sandboxes, the earlier runs' claims in place).
	if err := resetPeakRSS(k.ctrl.pid); err != nil {
		k.note("memory: the controller's peak RSS could not be reset before the scale-up (%v): its peak covers every phase", err)
	} else {
		k.ScalePeakReset = true
	}
	var claims v1alpha1.SandboxClaimList
	if err := k.cl.List(ctx, &claims, client.InNamespace(k.ns)); err == nil {
		k.ClaimsAtScale = len(claims.Items)
	}
	total, running0 := k.tr.counts()
	target := k.p.Sandboxes
	var steps []int
	for s := (total/1000 + 1) * 1000; s < target; s += 1000 {
		steps = append(steps, s)
	}
	if target > total {
		steps = append(steps, target)
	}
	// Kept for the restart with every sandbox, and the teardown.
	stopAt := k.start.Add(k.p.Budget - scaleReserve - k.bridgeReserve())
	cpu0 := k.cpu()
	made := 0
	for _, step := range steps {
		if time.Now().After(stopAt) {
			break
		}
		t0 := time.Now()
		before := made
		if err := k.createPaced(ctx, step-total, &made, running0, stopAt); err != nil {
			return err
		}
		n := made - before
		// Every sandbox Running and the controller idle, then read.
		for {
			tot, run := k.tr.counts()
			if run >= tot && tot >= total+n {
				break
			}
			if time.Since(t0) > 5*time.Minute {
				return fmt.Errorf("%d of %d sandboxes running after 5m", run, tot)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err := k.waitQuiet(ctx, 2*time.Minute); err != nil {
			return err
		}
		total += n
		k.log("kwok: %d sandboxes running (+%d in %s)", total, n, time.Since(t0).Round(100*time.Millisecond))
		k.rssPoint(ctx, fmt.Sprintf("+%d in %.1fs", n, time.Since(t0).Seconds()))
	}
	if total < target {
		k.note("memory: the cluster grew to %d of -kwok-sandboxes %d sandboxes within the suite's budget (-kwok-budget %s); a larger budget runs it in full",
			total, target, k.p.Budget)
	}
	if made > 0 {
		k.addCPU(fmt.Sprintf("scale-up: %d sandboxes created directly", made), cpu0, nil)
	}
	return nil
}

// scaleReserve is the part of the budget the scale-up leaves for the
// controller restart with every sandbox and the teardown.
const scaleReserve = 45 * time.Second

// createPaced creates up to n sandboxes at CreateRate/s at most, with at
// most MaxStarting created but not yet seen Running, and stops early at
// stopAt. made counts the sandboxes created so far (it names them).
func (k *kwokSuite) createPaced(ctx context.Context, n int, made *int, running0 int, stopAt time.Time) error {
	jobs := make(chan string)
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range jobs {
				if err := k.cl.Create(ctx, k.newSandbox(name)); err != nil {
					failed.Store(fmt.Errorf("create sandbox %s: %w", name, err))
				}
			}
		}()
	}
	defer func() { close(jobs); wg.Wait() }()
	tick := time.NewTicker(time.Duration(float64(time.Second) / k.p.CreateRate))
	defer tick.Stop()
	for i := 0; i < n; i++ {
		for {
			_, run := k.tr.counts()
			if *made-(run-running0) < k.p.MaxStarting {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(stopAt) {
			return nil
		}
		if err, _ := failed.Load().(error); err != nil {
			return err
		}
		jobs <- fmt.Sprintf("m-%05d", *made)
		*made++
	}
	return nil
}

func (k *kwokSuite) rssPoint(ctx context.Context, at string) {
	time.Sleep(time.Second)
	total, _ := k.tr.counts()
	rss, hwm := memStatus(k.ctrl.pid)
	pt := rssPoint{Sandboxes: total, RSSMiB: mibOf(rss), HWMMiB: mibOf(hwm), At: at}
	if ms, err := k.ctrl.scrape(); err == nil {
		pt.HeapMiB = mibOf(int64(ms.sum("go_memstats_heap_inuse_bytes", nil)))
	}
	k.RSS = append(k.RSS, pt)
	k.log("kwok: controller with %d sandboxes: RSS %.1f MiB, peak %.1f MiB, Go heap in use %.1f MiB", total, pt.RSSMiB, pt.HWMMiB, pt.HeapMiB)
}

func mibOf(b int64) float64 { return math.Round(float64(b)/(1<<20)*10) / 10 }

// restart stops the controller and starts a fresh process with every
// sandbox in place: its peak RSS covers the initial lists and one reconcile
// of every object.
func (k *kwokSuite) restart(ctx context.Context) error {
	total, _ := k.tr.counts()
	k.ctrl.stop()
	t0 := time.Now()
	var err error
	if k.ctrl, err = startController(ctx, k.bin, k.env.Kubeconfig, k.ctrlLog, k.p.ControllerArgs); err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ms, err := k.ctrl.scrape()
		if err == nil {
			done := ms.sum("controller_runtime_reconcile_total", map[string]string{"controller": "sandbox"})
			if done >= float64(total) && ms.sum("workqueue_depth", nil) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("restarted controller did not reconcile %d sandboxes within 3m", total)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	synced := time.Since(t0)
	time.Sleep(time.Second)
	rss, hwm := memStatus(k.ctrl.pid)
	pt := rssPoint{Sandboxes: total, RSSMiB: mibOf(rss), HWMMiB: mibOf(hwm), At: fmt.Sprintf("fresh process, every sandbox reconciled %.1fs after start", synced.Seconds())}
	if ms, err := k.ctrl.scrape(); err == nil {
		pt.HeapMiB = mibOf(int64(ms.sum("go_memstats_heap_inuse_bytes", nil)))
	}
	k.Restart = &pt
	k.log("kwok: restarted controller with %d sandboxes: reconciled all in %s; RSS %.1f MiB, peak %.1f MiB", total, synced.Round(100*time.Millisecond), pt.RSSMiB, pt.HWMMiB)
	return nil
}

// fanOut calls do(0) … do(n-1) from workers goroutines, as a burst of
// callers does, and returns when every call has returned.
func fanOut(n, workers int, do func(i int)) {
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	wg.Wait()
}
