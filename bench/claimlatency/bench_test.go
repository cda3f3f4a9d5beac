// Package claimlatency measures claim latency on the kwok bed: warm (adopt a ready
// pool member) and cold (create a sandbox, kwok runs its pod), as a user sees
// it: from the claim's create call returning an error or not, to the claim
// reporting Ready through a watch. It runs only with SANDPOD_BENCH=1.
//
//	SANDPOD_KUBE_BIN=$(hack/kube/build.sh --print) SANDPOD_BENCH=1 \
//	  go test ./bench/claimlatency/ -run TestClaimLatency -v -count=1
//
// The figures at scale (open-loop and burst claims, API writes per claim,
// the controller binary's memory with 5,000 sandboxes) are in
// `go run ./bench -suites kwok`; see docs/performance.md.
//
// Knobs: SANDPOD_BENCH_CLAIMS (default 200 per kind), SANDPOD_BENCH_GAP (a
// pause before each sequential claim, e.g. 250ms, so the pool's refill does
// not overlap the next claim), SANDPOD_BENCH_REFILL_DELAY (the controller's
// --pool-refill-delay).
package claimlatency

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

func claims() int {
	if n, err := strconv.Atoi(os.Getenv("SANDPOD_BENCH_CLAIMS")); err == nil && n > 0 {
		return n
	}
	return 200
}

func TestClaimLatency(t *testing.T) {
	if os.Getenv("SANDPOD_BENCH") == "" {
		t.Skip("set SANDPOD_BENCH=1 (and " + harness.EnvBin + ") to measure claim latency")
	}
	env, err := harness.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	ns := env.Namespace(t)
	refill, _ := time.ParseDuration(os.Getenv("SANDPOD_BENCH_REFILL_DELAY")) // controller default when unset
	env.StartManager(t, harness.ManagerOptions{Options: controller.Options{PoolRefillDelay: refill}}, ns)
	ctx := context.Background()
	n := claims()

	for _, name := range []string{"warm", "cold"} {
		tmpl := &v1alpha1.SandboxTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.SandboxTemplateSpec{PodTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "python:3.13-slim"}},
			}}},
		}
		if err := env.Client.Create(ctx, tmpl); err != nil {
			t.Fatal(err)
		}
	}
	pool := &v1alpha1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
		Spec:       v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: "warm"}, Replicas: int32(n + 10)},
	}
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	fillStart := time.Now()
	harness.Eventually(t, 10*time.Minute, "pool filled", func() (bool, string) {
		p := &v1alpha1.SandboxWarmPool{}
		_ = env.Get(p, ns, "pool")
		return p.Status.ReadyReplicas == pool.Spec.Replicas, fmt.Sprintf("%d/%d ready", p.Status.ReadyReplicas, pool.Spec.Replicas)
	})
	fill := time.Since(fillStart)

	w := newWaiter(t, env, ns)
	warm, _ := w.sequential(t, env, ns, "w", "warm", n)
	cold, coldBound := w.sequential(t, env, ns, "c", "cold", n)
	fmt.Printf("\nclaim latency on the kwok bed (kube-apiserver %s + etcd, kwok node; %d claims each, sequential)\n", "v1.37.2", n)
	fmt.Printf("%-28s %10s %10s %10s\n", "", "p50", "p99", "max")
	for _, r := range []struct {
		name string
		d    []time.Duration
	}{{"warm claim (adopt member)", warm}, {"cold claim, to bound", coldBound}, {"cold claim, to ready", cold}} {
		fmt.Printf("%-28s %10s %10s %10s\n", r.name, pct(r.d, 50), pct(r.d, 99), pct(r.d, 100))
	}
	printControllerSide()
	burstN := n
	if burstN > 100 {
		burstN = 100
	}
	// Burst: all claims at once from 16 writers against a cold template.
	burstDur := w.burst(t, env, ns, "b", "cold", burstN, 16)

	fmt.Printf("pool fill: %d members ready in %s (%.0f/s)\n", pool.Spec.Replicas, fill.Round(time.Millisecond), float64(pool.Spec.Replicas)/fill.Seconds())
	fmt.Printf("cold burst: %d claims from 16 writers ready in %s (%.0f claims/s)\n\n", burstN, burstDur.Round(time.Millisecond), float64(burstN)/burstDur.Seconds())

	// Memory: the manager runs in this process; its caches hold every
	// sandbox, pod, secret and service. (The figure includes the test's own
	// claim informer and clients, so it is an upper bound.)
	var sbs v1alpha1.SandboxList
	if err := env.Client.List(ctx, &sbs, client.InNamespace(ns)); err == nil && len(sbs.Items) > 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Printf("process heap in use: %.1f MiB with %d sandboxes (%.1f MiB per 1,000, upper bound)\n\n",
			float64(ms.HeapInuse)/(1<<20), len(sbs.Items), float64(ms.HeapInuse)/(1<<20)/float64(len(sbs.Items))*1000)
	}

	// Every warm claim must have been served warm.
	var list v1alpha1.SandboxClaimList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.Spec.TemplateRef.Name == "warm" && !c.Status.Warm {
			t.Errorf("claim %s on the warm template was served cold", c.Name)
		}
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(10 * time.Microsecond)
}

// waiter follows claims through one watch and wakes whoever waits for a
// claim to become Ready.
type waiter struct {
	mu      sync.Mutex
	bound   map[string]time.Time
	ready   map[string]time.Time
	waiting map[string]chan time.Time
}

func newWaiter(t *testing.T, env *harness.Env, ns string) *waiter {
	// An informer, not a bare watch: it re-establishes its watch when the API
	// server closes it (which it does to watchers that fall behind a burst).
	c, err := crcache.New(env.Config, crcache.Options{Scheme: env.Client.Scheme(), DefaultNamespaces: map[string]crcache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	inf, err := c.GetInformer(ctx, &v1alpha1.SandboxClaim{})
	if err != nil {
		t.Fatal(err)
	}
	w := &waiter{bound: map[string]time.Time{}, ready: map[string]time.Time{}, waiting: map[string]chan time.Time{}}
	on := func(obj interface{}) {
		c, ok := obj.(*v1alpha1.SandboxClaim)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if c.Status.SandboxName != "" {
			if _, seen := w.bound[c.Name]; !seen {
				w.bound[c.Name] = now
			}
		}
		if c.Status.SandboxName != "" && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady) {
			if _, seen := w.ready[c.Name]; !seen {
				w.ready[c.Name] = now
				if ch := w.waiting[c.Name]; ch != nil {
					ch <- now
				}
			}
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, n interface{}) { on(n) },
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("waiter cache did not sync")
	}
	return w
}

func (w *waiter) expect(name string) chan time.Time {
	ch := make(chan time.Time, 1)
	w.mu.Lock()
	w.waiting[name] = ch
	w.mu.Unlock()
	return ch
}

func claim(ns, name, tmpl string) *v1alpha1.SandboxClaim {
	return &v1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: tmpl}},
	}
}

// sequential makes n claims one after the other and returns, per claim, the
// time to Ready and the time to bound (a sandbox named in the claim status:
// for a cold claim, the controller's part before the pod starts).
func (w *waiter) sequential(t *testing.T, env *harness.Env, ns, prefix, tmpl string, n int) (ready, bound []time.Duration) {
	out := make([]time.Duration, 0, n)
	gap, _ := time.ParseDuration(os.Getenv("SANDPOD_BENCH_GAP"))
	for i := 0; i < n; i++ {
		time.Sleep(gap)
		name := fmt.Sprintf("%s%d", prefix, i)
		ch := w.expect(name)
		start := time.Now()
		if err := env.Client.Create(context.Background(), claim(ns, name, tmpl)); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-ch:
			out = append(out, at.Sub(start))
			w.mu.Lock()
			bound = append(bound, w.bound[name].Sub(start))
			w.mu.Unlock()
		case <-time.After(2 * time.Minute):
			t.Fatalf("claim %s not ready after 2m", name)
		}
	}
	return out, bound
}

func (w *waiter) burst(t *testing.T, env *harness.Env, ns, prefix, tmpl string, n, writers int) time.Duration {
	chans := make([]chan time.Time, n)
	for i := range chans {
		chans[i] = w.expect(fmt.Sprintf("%s%d", prefix, i))
	}
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for k := 0; k < writers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := env.Client.Create(context.Background(), claim(ns, fmt.Sprintf("%s%d", prefix, i), tmpl)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var last time.Time
	for i, ch := range chans {
		select {
		case at := <-ch:
			if at.After(last) {
				last = at
			}
		case <-time.After(5 * time.Minute):
			t.Fatalf("burst claim %d not ready", i)
		}
	}
	return last.Sub(start)
}

// printControllerSide prints the controller's own view of claim latency (the
// sandpod_claim_latency_seconds histogram: first seen to ready), which leaves
// out the API server's write and watch delivery on both ends.
func printControllerSide() {
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		return
	}
	for _, mf := range mfs {
		if mf.GetName() != "sandpod_claim_latency_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			mode := ""
			for _, l := range m.GetLabel() {
				mode = l.GetValue()
			}
			fmt.Printf("controller-side %-12s mean %s over %d claims\n", mode,
				(time.Duration(h.GetSampleSum() / float64(h.GetSampleCount()) * float64(time.Second))).Round(10*time.Microsecond), h.GetSampleCount())
		}
	}
}
