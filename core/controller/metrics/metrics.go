// Package metrics holds sandpod's Prometheus metrics, registered with the
// controller-runtime registry so the manager's metrics endpoint serves them.
package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

var (
	// ClaimLatency is the time from a claim first being seen by the
	// controller to its sandbox being ready, by mode (warm or cold).
	ClaimLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandpod_claim_latency_seconds",
		Help:    "Time from a SandboxClaim being seen to its sandbox being ready, by mode (warm: adopted from a pool; cold: created).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"mode"})
	// Claims counts bound claims by mode.
	Claims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandpod_claims_total",
		Help: "SandboxClaims bound to a sandbox, by mode (warm or cold).",
	}, []string{"mode"})
	// PoolReady is the ready members of each pool.
	PoolReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandpod_pool_ready_replicas", Help: "Ready, unclaimed members of a SandboxWarmPool.",
	}, []string{"namespace", "pool"})
	// PoolSize is the members (ready or not) of each pool.
	PoolSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandpod_pool_replicas", Help: "Unclaimed members of a SandboxWarmPool, ready or not.",
	}, []string{"namespace", "pool"})
	// PoolDesired is the desired size of each pool.
	PoolDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandpod_pool_desired_replicas", Help: "Desired ready members of a SandboxWarmPool (spec.replicas).",
	}, []string{"namespace", "pool"})
	// ReconcileErrors counts failed reconcile passes by controller.
	ReconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandpod_reconcile_errors_total", Help: "Reconcile passes that returned an error, by controller.",
	}, []string{"controller"})
)

// sandboxesByPhase reports sandboxes per phase from the informer cache at
// scrape time, so nothing has to keep a count in step.
type sandboxesByPhase struct {
	mu     sync.Mutex
	reader client.Reader
	desc   *prometheus.Desc
}

func (c *sandboxesByPhase) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *sandboxesByPhase) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	counts := map[v1alpha1.SandboxPhase]int{
		v1alpha1.SandboxPending: 0, v1alpha1.SandboxRunning: 0, v1alpha1.SandboxSuspended: 0,
		v1alpha1.SandboxExpired: 0, v1alpha1.SandboxFailed: 0, v1alpha1.SandboxTerminating: 0,
	}
	count := func(sb *v1alpha1.Sandbox) {
		p := sb.Status.Phase
		if p == "" {
			p = v1alpha1.SandboxPending
		}
		counts[p]++
	}
	if objs, ok := storeOf(reader); ok {
		// The informer's own objects, read only: a cache List, even
		// without deep copies, copies every sandbox struct into a new
		// slice (4 MiB of garbage per scrape at 5,000 sandboxes).
		for _, o := range objs {
			if sb, ok := o.(*v1alpha1.Sandbox); ok {
				count(sb)
			}
		}
	} else {
		var list v1alpha1.SandboxList
		if err := reader.List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			count(&list.Items[i])
		}
	}
	for p, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(p))
	}
}

// storeOf lists the sandbox informer's store of reader when reader is a
// controller-runtime cache (whose informers are client-go's).
func storeOf(reader client.Reader) ([]any, bool) {
	informers, ok := reader.(cache.Informers)
	if !ok {
		return nil, false
	}
	inf, err := informers.GetInformer(context.Background(), &v1alpha1.Sandbox{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, false
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, false
	}
	return withStore.GetStore().List(), true
}

var (
	registerOnce sync.Once
	byPhase      = &sandboxesByPhase{desc: prometheus.NewDesc("sandpod_sandboxes", "Sandboxes by phase.", []string{"phase"}, nil)}
)

// Register adds the metrics to the controller-runtime registry; reader is the
// manager's cache, read at scrape time. Calling it again only swaps the
// reader (tests start several managers in one process).
func Register(reader client.Reader) {
	byPhase.mu.Lock()
	byPhase.reader = reader
	byPhase.mu.Unlock()
	registerOnce.Do(func() {
		crmetrics.Registry.MustRegister(ClaimLatency, Claims, PoolReady, PoolSize, PoolDesired, ReconcileErrors, byPhase)
	})
}
