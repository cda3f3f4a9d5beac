package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/uninstall"
)

// ExitUninstallRefused: `sandpod uninstall-check` refused (Sandboxes exist
// and --sandboxes=refuse). deploy/uninstall.sh exits 2 in the same case,
// but 2 is the CLI's usage error; a refusal is the state not allowing it.
const ExitUninstallRefused = ExitConflict

func (a *app) uninstallCheckCommand() *cobra.Command {
	var (
		kubeconfig, mode string
		o                uninstall.Options
		timeout          time.Duration
	)
	c := &cobra.Command{
		Use:   "uninstall-check",
		Short: "before an uninstall: refuse while Sandboxes exist, or keep them, or delete them",
		Long: `uninstall-check is the Helm chart's pre-delete hook (helm uninstall runs it
first, in a Job; docs/install.md#uninstall). It counts the Sandboxes of all
namespaces in the cluster at --kubeconfig ($KUBECONFIG, else in-cluster) and,
by --sandboxes:

  refuse  (default) while any Sandbox exists: print how many, which, and the
          ways out, and exit 68, so that helm uninstall deletes nothing
  keep    go on: the Sandboxes, their PVCs and the CRDs stay
  delete  delete the SandboxWarmPools, SandboxClaims, Sandboxes and
          SandboxSnapshots, and wait (up to --timeout) for them to go, while
          the controller still runs to finalize them; then go on

With no Sandbox, refuse and keep go on at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := uninstall.ParseMode(mode)
			if err != nil {
				return usageErrorf("--sandboxes: %v", err)
			}
			o.Mode = m
			cfg, err := preflightConfig(kubeconfig)
			if err != nil {
				return exitErrorf(ExitConfig, "uninstall-check: kubeconfig: %v", err)
			}
			sch, err := scheme.New()
			if err != nil {
				return err
			}
			cl, err := client.New(cfg, client.Options{Scheme: sch})
			if err != nil {
				return exitErrorf(ExitUnavailable, "uninstall-check: %v", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			_, err = uninstall.Run(ctx, cl, o, a.out)
			switch {
			case errors.Is(err, uninstall.ErrRefused):
				return &codeError{code: ExitUninstallRefused}
			case errors.Is(err, context.DeadlineExceeded):
				return exitErrorf(ExitTimeout, "uninstall-check: %v (rerun the uninstall to go on waiting)", err)
			case err != nil:
				return exitErrorf(ExitError, "uninstall-check: %v", err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	f.StringVar(&mode, "sandboxes", string(uninstall.ModeRefuse), "what to do with existing Sandboxes: refuse, keep or delete")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "longest the check (with delete: the wait for the objects to go) may take")
	f.StringVar(&o.Release.Name, "helm-release", "", "the Helm release being uninstalled (the refusal prints its commands)")
	f.StringVar(&o.Release.Namespace, "helm-namespace", "", "the Helm release's namespace")
	f.IntVar(&o.Release.Revision, "helm-revision", 0, "the Helm release's revision")
	return c
}
