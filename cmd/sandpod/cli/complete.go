package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Completion asks the server for names, briefly: a server that does not
// answer within completionTimeout completes nothing rather than hang the
// shell.
const completionTimeout = 2 * time.Second

func (a *app) completeNames(cmd *cobra.Command, list func(ctx context.Context) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	names, err := list(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func (a *app) sandboxNames(ctx context.Context) ([]string, error) {
	c, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for sb, err := range c.List(ctx) {
		if err != nil {
			return nil, err
		}
		names = append(names, sb.Name())
	}
	return names, nil
}

// completeSandboxes completes every argument with sandbox names.
func (a *app) completeSandboxes(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return a.completeNames(cmd, a.sandboxNames)
}

// completeFirstSandbox completes the first argument only (exec, expose).
func (a *app) completeFirstSandbox(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return a.completeNames(cmd, a.sandboxNames)
}

func (a *app) completeTemplates(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 && cmd.Name() == "claim" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeNames(cmd, func(ctx context.Context) ([]string, error) {
		c, err := a.dial(ctx)
		if err != nil {
			return nil, err
		}
		ts, err := c.Templates(ctx)
		names := make([]string, 0, len(ts))
		for _, t := range ts {
			names = append(names, t.Name)
		}
		return names, err
	})
}

func (a *app) completePools(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return a.completeNames(cmd, func(ctx context.Context) ([]string, error) {
		c, err := a.dial(ctx)
		if err != nil {
			return nil, err
		}
		ps, err := c.WarmPools(ctx)
		names := make([]string, 0, len(ps))
		for _, p := range ps {
			names = append(names, p.Name)
		}
		return names, err
	})
}

// completeCopy completes a cp argument: local paths by the shell, or
// "NAME:" for a word that does not look like a local path.
func (a *app) completeCopy(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) >= 2 || strings.Contains(toComplete, ":") || strings.ContainsAny(toComplete[:min(1, len(toComplete))], "./~") {
		return nil, cobra.ShellCompDirectiveDefault
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	names, err := a.sandboxNames(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveDefault
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, n+":")
	}
	return out, cobra.ShellCompDirectiveNoSpace
}
