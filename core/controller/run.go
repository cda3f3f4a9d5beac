package controller

import (
	"context"
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

	"github.com/sandpod/sandpod/core/controller/sandbox"
	"github.com/sandpod/sandpod/core/lowmem"
)

// RunConfig is what `sandpod controller` was asked for (its flags are
// parsed in cmd/sandpod/controller.go).
type RunConfig struct {
	Kubeconfig              string  // "" is $KUBECONFIG, then the in-cluster config
	MetricsAddr             string  // of the Prometheus metrics ("0" disables them)
	ProbeAddr               string  // of /healthz and /readyz
	PprofAddr               string  // of /debug/pprof ("" is off)
	LeaderElect             bool    // elect a leader so only one replica reconciles
	LeaderElectionNamespace string  // "" is the pod's namespace
	QPS                     float32 // client QPS to the API server
	Burst                   int     // client burst to the API server
	// Delivery is the asked agent delivery: "auto" asks the API server's
	// version (resolveAgentDelivery).
	Delivery string
	// Options are the reconcilers'; AgentDelivery is set from Delivery.
	Options Options
}

// Run is `sandpod controller`: it runs the manager of rc until ctx is
// done. The process's logger and GC settings are the caller's.
func Run(ctx context.Context, rc RunConfig) error {
	// Collect twice as often while the start decodes and reconciles
	// everything at once (lowmem.StartupGCPercent); put back once the caches
	// have synced and the first passes are done (below).
	gcSteady := debug.SetGCPercent(-1)
	debug.SetGCPercent(lowmem.StartupGCPercent(gcSteady))

	cfg, err := LoadConfig(rc.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = rc.QPS, rc.Burst

	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   CacheOptions(),
		Client:                  ClientOptions(),
		Metrics:                 metricsserver.Options{BindAddress: rc.MetricsAddr},
		HealthProbeBindAddress:  rc.ProbeAddr,
		PprofBindAddress:        rc.PprofAddr,
		LeaderElection:          rc.LeaderElect,
		LeaderElectionID:        "sandpod-controller.sandpod.dev",
		LeaderElectionNamespace: rc.LeaderElectionNamespace,
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
	agentDelivery, err := resolveAgentDelivery(cfg, rc.Delivery)
	if err != nil {
		return err
	}
	ctrl.Log.Info("agent delivery", "mode", agentDelivery, "image", rc.Options.AgentImage)
	o := rc.Options
	o.AgentDelivery = agentDelivery
	if err := Setup(ctx, mgr, o); err != nil {
		return err
	}
	// The pages of the binary that the start touched and the controller
	// will not touch again (core/lowmem/pageout.go): once now, past every package's
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
