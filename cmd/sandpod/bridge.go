package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/bridge/kube"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	"github.com/sandpod/sandpod/core/lowmem"
)

var _ bridge.Backend = (*kube.Backend)(nil)

func init() {
	register("bridge", "run the gRPC API on a Kubernetes cluster (in a pod, or outside with a kubeconfig)", runBridge)
}

func runBridge(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	var sf serverFlags
	sf.register(fs, ":50051")
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then the in-cluster config)")
	namespaces := fs.String("namespaces", "", "comma-separated namespaces the bridge serves (default: all)")
	review := fs.Bool("token-review", false, "also accept Kubernetes tokens (e.g. service-account tokens), checked with TokenReview; a namespace is allowed when the caller may create SandboxClaims in it")
	activity := fs.Duration("activity-interval", 10*time.Second, "longest delay before an exec or file call is recorded in a sandbox's lastActivityTime")
	legacy := fs.Bool("legacy-agent-secrets", false, "also reach agents of pods an earlier controller made (status.agentAuth empty) with their per-sandbox Secret; needs `get secrets` in every namespace (docs/install.md); off, such sandboxes are refused with AGENT_LEGACY_POD")
	caNS := fs.String("agent-ca-namespace", "", "namespace of the agents' bridge CA, Secret sandpod-agent-ca, that the controller makes (default: $POD_NAMESPACE, else the pod's namespace, else sandpod-system)")
	clusterDomain := fs.String("cluster-domain", v1alpha1.DefaultClusterDomain, "the cluster's DNS domain (the kubelets' clusterDomain): a sandbox's service name before the controller reports it")
	gcPercent := fs.Int("gc-percent", lowmem.DefaultGCPercent, "Go GC target percentage (as GOGC; $GOGC, when set, wins): how far the heap grows past what is live before a collection")
	memLimit := fs.String("memory-limit", "", "Go soft memory limit, e.g. 96Mi, or off (default: $GOMEMLIMIT if set, else 90% of the container's memory limit)")
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log level: info, or debug (adds a line per ClaimSandbox with the time of each stage)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if _, err := lowmem.ApplyGCSettings(*gcPercent, *memLimit); err != nil {
		fmt.Fprintln(os.Stderr, "bridge:", err)
		return 2
	}
	domain, err := v1alpha1.ParseClusterDomain(*clusterDomain)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if err == nil {
		err = sf.check()
	}
	if err != nil {
		log.Error("bridge: " + err.Error())
		return 2
	}
	ko := kube.Options{ActivityInterval: *activity, Logger: log, ClusterDomain: domain, AgentCANamespace: *caNS, LegacyAgentSecrets: *legacy}
	if err := runKubeBridge(ctx, log, sf, *kubeconfig, *namespaces, *review, ko); err != nil {
		log.Error("bridge", "err", err)
		return 1
	}
	return 0
}

func runKubeBridge(ctx context.Context, log *slog.Logger, sf serverFlags, kubeconfig, namespaces string, review bool, ko kube.Options) error {
	bo, err := sf.bridgeOptions()
	if err != nil {
		return err
	}
	cfg, err := controller.LoadConfig(kubeconfig)
	if err != nil {
		return err
	}
	if review {
		tr, err := kube.NewTokenReviewer(cfg)
		if err != nil {
			return err
		}
		bo.Authenticators = append(bo.Authenticators, tr)
	}
	// Calls are many and small (claims, activity): raise client-go's
	// default client-side limit of 5 requests/s.
	cfg.QPS, cfg.Burst = 500, 1000
	for _, ns := range strings.Split(namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			ko.Namespaces = append(ko.Namespaces, ns)
		}
	}
	backend, err := kube.New(ctx, cfg, ko)
	if err != nil {
		return err
	}
	// The pages of the binary the start touched and the bridge will not
	// touch again: its caches have synced (core/lowmem/pageout.go).
	if n, err := lowmem.PageOutBinary(); err != nil {
		log.Debug("page out the binary's read-only pages", "err", err)
	} else {
		log.Debug("paged out the binary's read-only pages", "bytes", n)
	}
	b := bridge.New(backend)
	defer b.Close()
	log.Info("sandpod bridge on Kubernetes", "api", cfg.Host, "namespaces", ko.Namespaces, "legacyAgentSecrets", ko.LegacyAgentSecrets)
	return serveGRPC(ctx, log, b, bo, sf)
}
