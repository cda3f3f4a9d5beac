package cli

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) logsCommand() *cobra.Command {
	var (
		stateDir string
		follow   bool
	)
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "a sandbox's log, read from the state directory of a local serve",
		Long: `The sandpod API has no call that returns a sandbox's log. A sandbox's main
program (the template's command) and its agent write to the server's side:
agent.log in sandboxes/<namespace>/<name>/ under the state directory of
sandpod serve (local engine), or the sandbox pod's log on Kubernetes
(kubectl logs).

On the machine that runs sandpod serve, --state-dir DIR (serve's
--state-dir; /var/lib/sandpod for a serve run as root) prints that file,
and -f follows it. Without --state-dir, logs says where the log is and exits
with code 79.`,
		Example:           `  sudo sandpod logs sb --state-dir /var/lib/sandpod -f`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			sb, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return a.commandError(asOp("logs", err))
			}
			ns, name := sb.Info().Namespace, sb.Info().Name
			if stateDir == "" {
				return exitErrorf(ExitUnsupported,
					"logs: not available through the API (it has no log call): %s/%s logs to agent.log under sandboxes/%s/%s/ in the state directory of `sandpod serve` (read it with --state-dir DIR on that machine), or to its pod's log on Kubernetes (kubectl logs -n %s)",
					ns, name, ns, name, ns)
			}
			// Names from the server become a path: only DNS labels do.
			if !isDNSLabel(ns) || !isDNSLabel(name) {
				return exitErrorf(ExitError, "logs: the server named the sandbox %q/%q", ns, name)
			}
			path := filepath.Join(stateDir, "sandboxes", ns, name, "agent.log")
			return a.printLog(cmd.Context(), path, follow)
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "the state directory of the local sandpod serve that runs the sandbox")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is added, until Ctrl-C")
	return cmd
}

// printLog copies the log file to stdout; with follow it then polls for
// more until ctx ends (Ctrl-C: exit 0).
func (a *app) printLog(ctx context.Context, path string, follow bool) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return exitErrorf(ExitNoInput, "logs: no log at %s: is that the state directory of the serve that runs this sandbox?", path)
	}
	if err != nil {
		return exitErrorf(ExitNoInput, "logs: %s: %v", path, unwrapPathError(err))
	}
	defer f.Close()
	if _, err := io.Copy(a.out, f); err != nil {
		return err
	}
	if !follow {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer a.setSignalHandler(func(os.Signal) bool { cancel(); return true })()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := io.Copy(a.out, f); err != nil {
			return err
		}
	}
}
