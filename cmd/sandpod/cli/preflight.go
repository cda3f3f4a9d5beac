package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/preflight"
)

// ExitPreflightFailed: `sandpod preflight` found a failing check (or a
// warning, with --strict).
const ExitPreflightFailed = 1

func (a *app) preflightCommand() *cobra.Command {
	var (
		o                preflight.Options
		kubeconfig       string
		domain           string
		strict           bool
		probeImage       string
		probeTimeout     time.Duration
		probeNamespace   string
		runtimeClassFlag []string
	)
	c := &cobra.Command{
		Use:   "preflight",
		Short: "check that a Kubernetes cluster can run sandpod (before installing, and after)",
		Long: `preflight checks the cluster at --kubeconfig ($KUBECONFIG, else in-cluster):
the API server version; sandpod's CRDs; each RuntimeClass the SandboxTemplates
name, and whether a ready node can run it; StorageClasses and
VolumeSnapshotClasses; image-volume support (agent delivery); the RBAC of the
controller's and the bridge's service accounts (SubjectAccessReviews); that a
pod resolves kubernetes.default.svc.<cluster domain>; and that NetworkPolicy is
enforced (a client pod, a server pod, a policy denying the server ingress).

The probe pods run the sandpod image (--probe-image) in a temporary namespace
(or --probe-namespace), and are deleted after, within --probe-timeout.

It prints a table of pass, warn and fail, each with what to do, and exits 1
when a check fails (--strict: or warns), 0 otherwise. See docs/install.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out := a.flags.output; out != "table" && out != "json" {
				return usageErrorf("preflight: -o %s: want table or json", out)
			}
			d, err := v1alpha1.ParseClusterDomain(domain)
			if err != nil {
				return usageErrorf("--cluster-domain: %v", err)
			}
			o.ClusterDomain, o.RuntimeClasses = d, runtimeClassFlag
			o.Probe = preflight.ProbeOptions{Image: probeImage, Namespace: probeNamespace, Timeout: probeTimeout}
			cfg, err := preflightConfig(kubeconfig)
			if err != nil {
				return exitErrorf(ExitConfig, "preflight: kubeconfig: %v", err)
			}
			cfg.QPS, cfg.Burst = 50, 100
			return a.runPreflight(cmd.Context(), cfg, o, strict)
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	f.StringVar(&o.SystemNamespace, "system-namespace", "sandpod-system", "namespace sandpod is installed in")
	f.StringVar(&o.ControllerSA, "controller-service-account", "sandpod-controller", "the controller's service account")
	f.StringVar(&o.BridgeSA, "bridge-service-account", "sandpod-bridge", "the bridge's service account")
	f.StringVar(&domain, "cluster-domain", v1alpha1.DefaultClusterDomain, "the cluster's DNS domain (the kubelets' clusterDomain)")
	f.StringSliceVar(&runtimeClassFlag, "runtime-class", nil, "also check this RuntimeClass (repeatable), e.g. one templates will name")
	f.BoolVar(&o.SkipProbes, "skip-probes", false, "no probe pods: leave out the DNS and NetworkPolicy checks (they warn)")
	f.StringVar(&probeImage, "probe-image", "ghcr.io/sandpod/sandpod:latest", "image of the probe pods (the sandpod image: they run `sandpod preflight probe`)")
	f.StringVar(&probeNamespace, "probe-namespace", "", "run the probe pods in this namespace (default: a temporary one, deleted after)")
	f.DurationVar(&probeTimeout, "probe-timeout", 2*time.Minute, "longest the probes may take together")
	f.BoolVar(&strict, "strict", false, "exit 1 on warnings too")
	f.BoolVar(&o.PreInstall, "pre-install", false, "sandpod is not installed yet: its missing CRDs and service accounts warn instead of failing")
	c.AddCommand(a.preflightProbeCommand())
	return c
}

func preflightConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

func (a *app) runPreflight(ctx context.Context, cfg *rest.Config, o preflight.Options, strict bool) error {
	if a.flags.output == "table" && !o.SkipProbes {
		fmt.Fprintf(a.err, "sandpod preflight: checking %s (probe pods take up to %s)...\n", cfg.Host, o.Probe.Timeout)
	}
	facts, err := preflight.Gather(ctx, cfg, o)
	if err != nil && facts == nil {
		return exitErrorf(ExitUnavailable, "preflight: %v", err)
	}
	rep := preflight.Check(facts)
	if a.flags.output == "json" {
		err = rep.WriteJSON(a.out)
	} else {
		err = rep.WriteTable(a.out)
	}
	if err != nil {
		return err
	}
	if rep.Failed(strict) {
		return &codeError{code: ExitPreflightFailed}
	}
	return nil
}

// preflightProbeCommand is what the probe pods run (hidden).
func (a *app) preflightProbeCommand() *cobra.Command {
	var dns, listen, connect, expect string
	var within time.Duration
	c := &cobra.Command{
		Use:    "probe",
		Short:  "run inside preflight's probe pods",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var err error
			switch {
			case dns != "":
				err = preflight.ProbeDNS(ctx, a.out, dns)
			case listen != "":
				err = preflight.ProbeListen(ctx, listen)
			case connect != "":
				err = preflight.ProbeConnect(ctx, a.out, connect, expect, within)
			default:
				return usageErrorf("preflight probe: want --dns, --listen or --connect")
			}
			if errors.Is(err, preflight.ErrNotAsExpected) {
				return &codeError{code: ExitPreflightFailed}
			}
			if err != nil {
				return exitErrorf(ExitError, "preflight probe: %v", err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&dns, "dns", "", "resolve this name")
	f.StringVar(&listen, "listen", "", "accept TCP connections on this address")
	f.StringVar(&connect, "connect", "", "connect to this address")
	f.StringVar(&expect, "expect", "open", "with --connect: open or blocked")
	f.DurationVar(&within, "within", 20*time.Second, "with --connect: how long to try")
	return c
}
