package controller

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/sandbox"
	"github.com/sandpod/sandpod/core/controller/template"
	"github.com/sandpod/sandpod/core/lowmem"
)

// Run is `sandpod controller`: it parses its flags from args and runs the
// manager until ctx is done.
func Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sandpod controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then the in-cluster config)")
	metricsAddr := fs.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	leaderElect := fs.Bool("leader-elect", false, "elect a leader so only one replica reconciles")
	ownNS := fs.String("namespace", "", "sandpod's own namespace, where the controller keeps the agents' bridge CA (Secret sandpod-agent-ca) (default: $POD_NAMESPACE, else the pod's namespace, else sandpod-system)")
	leaderNS := fs.String("leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	rcPolicy := fs.String("runtime-class-policy", sandbox.RuntimeClassNone, "none | require (refuse sandboxes whose pod names no RuntimeClass) | default (give them --default-runtime-class)")
	rcDefault := fs.String("default-runtime-class", "", "RuntimeClass given to sandbox pods that name none, with --runtime-class-policy=default")
	agentImage := fs.String("agent-image", DefaultAgentImage, "image holding the sandpod binary that is injected into every sandbox pod")
	delivery := fs.String("agent-delivery", string(sandbox.AgentDeliveryAuto), "how the agent binary gets into sandbox pods: image-volume (no init container; Kubernetes 1.35+ with containerd 2.1+ or CRI-O), init-container (any cluster), or auto (image-volume when the API server is 1.35 or newer)")
	workers := fs.Int("workers", 8, "concurrent reconciles per kind (claims get four times as many)")
	poolBatch := fs.Int("pool-batch", 16, "members a warm pool creates per pass at most")
	snapRecheck := fs.Duration("snapshot-recheck", 0, "how often a SandboxSnapshot being taken reads its VolumeSnapshots when no change wakes it (0: 1m when the cluster serves VolumeSnapshots at start, which are then watched; 2s when it does not)")
	refillDelay := fs.Duration("pool-refill-delay", time.Second, "how long claims must pause before a warm pool refills (refills yield to claims, at most 10 times this long; a pool below half its size waits only this long; 0 refills at once; the same rule as sandpod serve)")
	qps := fs.Float64("kube-api-qps", 200, "client QPS to the API server")
	burst := fs.Int("kube-api-burst", 400, "client burst to the API server")
	pprofAddr := fs.String("pprof-bind-address", "", "address of Go's /debug/pprof endpoints, for profiling (default: off)")
	verbosity := fs.String("v", "0", "log verbosity (1: also a line per bound SandboxClaim, \"claim timing\", with where its time went in the controller)")
	gcPercent := fs.Int("gc-percent", lowmem.DefaultGCPercent, "Go GC target percentage (as GOGC; $GOGC, when set, wins): how far the heap grows past what is live before a collection (half of it during the start, until 30s after the caches have synced)")
	clusterDomain := fs.String("cluster-domain", v1alpha1.DefaultClusterDomain, "the cluster's DNS domain (the kubelets' clusterDomain), in each sandbox's status.serviceFQDN")
	untrack := fs.Bool("untrack-pool-members", true, "clear new warm pool members' managedFields before their first status: kube-apiserver then tracks neither that status nor the claim's take, less of its CPU per claim than the one write per member this costs (false: 5 writes per refilled member instead of 6; the take still clears them)")
	dnsEgress := fs.String("dns-egress", "", "DNS servers besides the pods in kube-system that managed NetworkPolicies let sandboxes reach on port 53: comma-separated addresses or CIDRs of at most 256 addresses, e.g. NodeLocal DNSCache's 169.254.20.10")
	memLimit := fs.String("memory-limit", "", "Go soft memory limit, e.g. 96Mi, or off (default: $GOMEMLIMIT if set, else 90% of the container's memory limit)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	domain, err := v1alpha1.ParseClusterDomain(*clusterDomain)
	if err != nil {
		return fmt.Errorf("--cluster-domain: %w", err)
	}
	extraDNS, err := template.ParseDNSRanges(*dnsEgress)
	if err != nil {
		return fmt.Errorf("--dns-egress: %w", err)
	}
	var klogFlags flag.FlagSet
	klog.InitFlags(&klogFlags)
	if err := klogFlags.Set("v", *verbosity); err != nil {
		return fmt.Errorf("-v: %w", err)
	}
	ctrl.SetLogger(klog.NewKlogr())
	if limit, err := lowmem.ApplyGCSettings(*gcPercent, *memLimit); err != nil {
		return err
	} else if limit > 0 {
		klog.InfoS("soft memory limit", "bytes", limit)
	}
	// Collect twice as often while the start decodes and reconciles
	// everything at once (startupGCPercent); put back once the caches
	// have synced and the first passes are done (below).
	gcSteady := debug.SetGCPercent(-1)
	debug.SetGCPercent(lowmem.StartupGCPercent(gcSteady))

	cfg, err := LoadConfig(*kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst

	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   CacheOptions(),
		Client:                  ClientOptions(),
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:  *probeAddr,
		PprofBindAddress:        *pprofAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "sandpod-controller.sandpod.dev",
		LeaderElectionNamespace: *leaderNS,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	agentDelivery, err := resolveAgentDelivery(cfg, *delivery)
	if err != nil {
		return err
	}
	ctrl.Log.Info("agent delivery", "mode", agentDelivery, "image", *agentImage)
	if err := Setup(ctx, mgr, Options{
		AgentImage:        *agentImage,
		AgentCANamespace:  *ownNS,
		AgentDelivery:     agentDelivery,
		RuntimeClass:      sandbox.RuntimeClassPolicy{Mode: *rcPolicy, Default: *rcDefault},
		Workers:           *workers,
		ClusterDomain:     domain,
		ExtraDNS:          extraDNS,
		KeepManagedFields: !*untrack,
		PoolBatch:         *poolBatch,
		SnapshotRecheck:   *snapRecheck,
		PoolRefillDelay: func() time.Duration {
			if *refillDelay == 0 {
				return -1
			}
			return *refillDelay
		}(),
	}); err != nil {
		return err
	}
	// The pages of the binary that the start touched and the controller
	// will not touch again (pageout.go): once now, past every package's
	// init and the manager's setup, and once the caches have synced.
	pageOut("setup")
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			// The initial lists are garbage now, and every sandbox is
			// about to be reconciled at once (nothing throttles a restart's
			// passes since they read no Secret): return the lists' pages
			// first, so the passes' garbage does not pile on top of them.
			debug.FreeOSMemory()
			pageOut("caches synced")
		}
		select {
		case <-ctx.Done():
		case <-time.After(lowmem.StartupWindow):
		}
		debug.SetGCPercent(gcSteady)
	}()
	return mgr.Start(ctx)
}

func pageOut(when string) {
	if n, err := lowmem.PageOutBinary(); err != nil {
		klog.V(1).InfoS("page out the binary's read-only pages", "when", when, "err", err)
	} else {
		klog.V(1).InfoS("paged out the binary's read-only pages", "when", when, "bytes", n)
	}
}

// resolveAgentDelivery asks the API server its version only for "auto".
func resolveAgentDelivery(cfg *rest.Config, flag string) (sandbox.AgentDelivery, error) {
	server := ""
	if flag == string(sandbox.AgentDeliveryAuto) || flag == "" {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return "", err
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return "", fmt.Errorf("--agent-delivery=auto: API server version: %w", err)
		}
		server = v.GitVersion
	}
	return sandbox.ResolveAgentDelivery(flag, server)
}

// LoadConfig is the client config of a sandpod process: the kubeconfig at
// path, else $KUBECONFIG, else the in-cluster config.
func LoadConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return rest.InClusterConfig()
}
