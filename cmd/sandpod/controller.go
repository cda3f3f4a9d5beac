package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	"github.com/sandpod/sandpod/core/controller/sandbox"
	"github.com/sandpod/sandpod/core/controller/template"
	"github.com/sandpod/sandpod/core/lowmem"
)

func init() {
	register("controller", "run the Kubernetes controller (CRD reconcilers)", func(ctx context.Context, args []string) int {
		if err := runController(ctx, args); err != nil {
			fmt.Fprintln(os.Stderr, "sandpod controller:", err)
			return 1
		}
		return 0
	})
}

// runController parses the controller's flags from args and runs it until
// ctx is done. `sandpod controller -h` prints every flag from the flag set
// itself; docs/install.md has them in a table (TestControllerFlagsAreDocumented).
func runController(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sandpod controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then the in-cluster config)")
	metricsAddr := fs.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	leaderElect := fs.Bool("leader-elect", false, "elect a leader so only one replica reconciles")
	ownNS := fs.String("namespace", "", "sandpod's own namespace, where the controller keeps the agents' bridge CA (Secret sandpod-agent-ca) (default: $POD_NAMESPACE, else the pod's namespace, else sandpod-system)")
	leaderNS := fs.String("leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	rcPolicy := fs.String("runtime-class-policy", sandbox.RuntimeClassNone, "none | require (refuse sandboxes whose pod names no RuntimeClass) | default (give them --default-runtime-class)")
	rcDefault := fs.String("default-runtime-class", "", "RuntimeClass given to sandbox pods that name none, with --runtime-class-policy=default")
	agentImage := fs.String("agent-image", controller.DefaultAgentImage, "image holding the sandpod binary that is injected into every sandbox pod")
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
	return controller.Run(ctx, controller.RunConfig{
		Kubeconfig:              *kubeconfig,
		MetricsAddr:             *metricsAddr,
		ProbeAddr:               *probeAddr,
		PprofAddr:               *pprofAddr,
		LeaderElect:             *leaderElect,
		LeaderElectionNamespace: *leaderNS,
		QPS:                     float32(*qps),
		Burst:                   *burst,
		Delivery:                *delivery,
		Options: controller.Options{
			AgentImage:        *agentImage,
			AgentCANamespace:  *ownNS,
			RuntimeClass:      sandbox.RuntimeClassPolicy{Mode: *rcPolicy, Default: *rcDefault},
			Workers:           *workers,
			ClusterDomain:     domain,
			ExtraDNS:          extraDNS,
			KeepManagedFields: !*untrack,
			PoolBatch:         *poolBatch,
			SnapshotRecheck:   *snapRecheck,
			PoolRefillDelay:   refillDelayOf(*refillDelay),
		},
	})
}

// refillDelayOf is controller.Options.PoolRefillDelay for the flag: 0
// (refill at once) is -1 there, where 0 is the default.
func refillDelayOf(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
