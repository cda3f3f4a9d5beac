package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func (a *app) claimCommand() *cobra.Command {
	var (
		pool, policy, requestID string
		labels, env             []string
		ttl, wait               string
	)
	cmd := &cobra.Command{
		Use:   "claim [TEMPLATE]",
		Short: "claim a ready sandbox of a template (warm from its pool when one is ready)",
		Example: `  sandpod claim python
  SB=$(sandpod claim python --ttl 2h -l team=rl -o name)
  sandpod claim --pool python-large --env OPENAI_API_KEY=$KEY`,
		Args:              minArgs(0, "[TEMPLATE]"),
		ValidArgsFunction: a.completeTemplates,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("claim takes one TEMPLATE (got %d arguments)", len(args))
			}
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			template := ""
			if len(args) == 1 {
				template = args[0]
			}
			if template == "" && pool == "" {
				return usageErrorf("claim needs a TEMPLATE or --pool")
			}
			var opts []sandpod.SandboxOption
			l, err := parsePairs("label", labels)
			if err != nil {
				return err
			}
			e, err := parsePairs("env", env)
			if err != nil {
				return err
			}
			if l != nil {
				opts = append(opts, sandpod.WithLabels(l))
			}
			if e != nil {
				opts = append(opts, sandpod.WithEnv(e))
			}
			if ttl != "" {
				d, err := parseDuration("--ttl", ttl)
				if err != nil {
					return err
				}
				opts = append(opts, sandpod.WithTTL(d))
			}
			switch strings.ToLower(policy) {
			case "":
			case "delete":
				opts = append(opts, sandpod.WithShutdownPolicy(sandpod.ShutdownDelete))
			case "retain":
				opts = append(opts, sandpod.WithShutdownPolicy(sandpod.ShutdownRetain))
			default:
				return usageErrorf("--shutdown-policy %q: use delete or retain", policy)
			}
			if requestID != "" {
				opts = append(opts, sandpod.WithRequestID(requestID))
			}
			waitFor, err := parseDuration("--wait", wait)
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), waitFor)
			defer cancel()
			if pool != "" {
				wp, err := c.WarmPool(ctx, pool)
				if err != nil {
					return a.commandError(err)
				}
				if template != "" && template != wp.Template {
					return usageErrorf("pool %s serves template %s, not %s", pool, wp.Template, template)
				}
				template = wp.Template
			}
			var sb *sandpod.Sandbox
			err = a.during(ctx, "claiming a sandbox of "+template, func(ctx context.Context) error {
				var err error
				if sb, err = c.Claim(ctx, template, opts...); err != nil {
					return err
				}
				if !sb.Info().Ready() {
					return sb.WaitReady(ctx)
				}
				return nil
			})
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) && cmd.Context().Err() == nil {
					return exitErrorf(ExitTimeout, "claim: no ready sandbox of %s within %s (--wait)", template, waitFor)
				}
				return a.commandError(err)
			}
			warm := sb.Warm()
			return a.printSandboxes(format, []sandpod.Info{sb.Info()}, true, &warm)
		},
	}
	f := cmd.Flags()
	f.StringVar(&pool, "pool", "", "claim from this warm pool (its template)")
	f.StringArrayVarP(&labels, "label", "l", nil, "label KEY=VALUE (repeatable)")
	f.StringArrayVarP(&env, "env", "e", nil, "environment KEY=VALUE of every exec in the sandbox (repeatable)")
	f.StringVar(&ttl, "ttl", "", "time to live (30m, 2h, 7d); the template's default when not given")
	f.StringVar(&policy, "shutdown-policy", "", "what happens at the end of the ttl: delete or retain (the template's default when not given)")
	f.StringVar(&wait, "wait", "5m", "longest wait for a ready sandbox (a cold start)")
	f.StringVar(&requestID, "request-id", "", "idempotency key: the same id returns the same sandbox")
	_ = cmd.RegisterFlagCompletionFunc("pool", a.completePools)
	_ = cmd.RegisterFlagCompletionFunc("shutdown-policy", cobra.FixedCompletions([]string{"delete", "retain"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) lsCommand() *cobra.Command {
	var (
		selector, phases, pool, template string
		all                              bool
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "list sandboxes",
		Example: `  sandpod ls
  sandpod ls -l team=rl --phase running,suspended
  sandpod ls --all --pool python -o wide`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			f, err := newFilter(phases, pool, template)
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			opts := []sandpod.ListOption{sandpod.WithLabelSelector(selector)}
			if all || pool != "" {
				opts = append(opts, sandpod.WithPoolMembers())
			}
			var infos []sandpod.Info
			for sb, err := range c.List(cmd.Context(), opts...) {
				if err != nil {
					return a.commandError(err)
				}
				if f.keep(sb.Info(), all) {
					infos = append(infos, sb.Info())
				}
			}
			if len(infos) == 0 && (format == "table" || format == "wide") {
				fmt.Fprintf(a.err, "No sandboxes in namespace %s.\n", c.Namespace())
				return nil
			}
			return a.printSandboxes(format, infos, false, nil)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&selector, "selector", "l", "", "label selector, e.g. team=rl,run!=3")
	fl.StringVar(&phases, "phase", "", "only these phases (comma-separated: pending, running, suspended, expired, failed, terminating)")
	fl.StringVar(&pool, "pool", "", "only sandboxes from this warm pool (includes its unclaimed members)")
	fl.StringVar(&template, "template", "", "only sandboxes of this template")
	fl.BoolVarP(&all, "all", "A", false, "include unclaimed warm pool members")
	_ = cmd.RegisterFlagCompletionFunc("phase", cobra.FixedCompletions([]string{"pending", "running", "suspended", "expired", "failed", "terminating"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("pool", a.completePools)
	_ = cmd.RegisterFlagCompletionFunc("template", a.completeTemplates)
	return cmd
}

// filter keeps the sandboxes ls and watch show; the server filters by
// label, the CLI by phase, pool and template.
type filter struct {
	phases         map[sandpod.Phase]bool
	pool, template string
}

var allPhases = []sandpod.Phase{sandpod.PhasePending, sandpod.PhaseRunning, sandpod.PhaseSuspended, sandpod.PhaseExpired, sandpod.PhaseFailed, sandpod.PhaseTerminating}

func newFilter(phases, pool, template string) (*filter, error) {
	f := &filter{pool: pool, template: template}
	if phases == "" {
		return f, nil
	}
	f.phases = map[sandpod.Phase]bool{}
	for _, p := range strings.Split(phases, ",") {
		found := false
		for _, known := range allPhases {
			if strings.EqualFold(strings.TrimSpace(p), string(known)) {
				f.phases[known], found = true, true
			}
		}
		if !found {
			return nil, usageErrorf("--phase %q: use pending, running, suspended, expired, failed or terminating", p)
		}
	}
	return f, nil
}

// keep reports whether i passes the filter. --pool asks for the pool's
// unclaimed members too; without --all they are otherwise left out.
func (f *filter) keep(i sandpod.Info, all bool) bool {
	if f.phases != nil && !f.phases[i.Phase] {
		return false
	}
	if f.pool != "" && i.Pool != f.pool {
		return false
	}
	if f.template != "" && i.Template != f.template {
		return false
	}
	if !i.Claimed && !all && f.pool == "" {
		return false
	}
	return true
}

func (a *app) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "get NAME",
		Short:             "show one sandbox in full",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			sb, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return a.commandError(err)
			}
			if format == "table" || format == "wide" {
				return a.describe(sb.Info())
			}
			return a.printSandboxes(format, []sandpod.Info{sb.Info()}, true, nil)
		},
	}
}

// describe prints one sandbox as KEY: value lines and its conditions.
func (a *app) describe(i sandpod.Info) error {
	now := time.Now()
	t := newTable(a.out)
	when := func(x time.Time, rel string) string {
		if x.IsZero() {
			return "-"
		}
		return x.Local().Format(time.RFC3339) + " (" + rel + ")"
	}
	t.row("Name:", i.Name)
	t.row("Namespace:", i.Namespace)
	t.row("UID:", orDash(i.UID))
	t.row("Template:", orDash(i.Template))
	t.row("Pool:", orDash(i.Pool))
	t.row("Phase:", string(i.Phase))
	t.row("Message:", orDash(i.Message))
	t.row("Claimed:", fmt.Sprint(i.Claimed))
	t.row("Created:", when(i.CreateTime, age(i.CreateTime, now)+" ago"))
	t.row("Shutdown:", when(i.ShutdownTime, until(i.ShutdownTime, now)))
	t.row("Shutdown policy:", orDash(string(i.ShutdownPolicy)))
	t.row("Last activity:", when(i.LastActivityTime, age(i.LastActivityTime, now)+" ago"))
	idle := "never"
	if i.IdleTimeout > 0 {
		idle = "after " + i.IdleTimeout.String() + " idle"
	}
	t.row("Auto-suspend:", idle)
	t.row("Labels:", orDash(labelString(i.Labels)))
	t.row("Env keys:", orDash(strings.Join(i.EnvKeys, ",")))
	if i.ServiceFQDN != "" {
		t.row("Service:", i.ServiceFQDN)
	}
	t.row("Agent restarts:", fmt.Sprint(i.AgentRestarts))
	if err := t.flush(); err != nil {
		return err
	}
	if len(i.Conditions) == 0 {
		return nil
	}
	fmt.Fprintln(a.out, "Conditions:")
	ct := newTable(a.out, "  TYPE", "STATUS", "REASON", "SINCE", "MESSAGE")
	for _, c := range i.Conditions {
		ct.row("  "+c.Type, c.Status, orDash(c.Reason), age(c.LastTransitionTime, now), orDash(c.Message))
	}
	return ct.flush()
}

// eachSandbox runs fn on every name, printing one error line per failure
// and going on; it returns the states of those that worked and the first
// failure's exit code.
func (a *app) eachSandbox(ctx context.Context, names []string, verb string, fn func(ctx context.Context, c *sandpod.Client, name string) (*sandpod.Sandbox, error)) ([]sandpod.Info, error) {
	c, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	var infos []sandpod.Info
	var first error
	for _, name := range names {
		var sb *sandpod.Sandbox
		err := a.during(ctx, verb+" "+name, func(ctx context.Context) (err error) {
			sb, err = fn(ctx, c, name)
			return err
		})
		if err != nil {
			err = a.commandError(err)
			if first == nil {
				first = err
			}
			if len(names) > 1 {
				fmt.Fprintln(a.err, err.Error())
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if sb != nil {
			infos = append(infos, sb.Info())
		}
	}
	if first != nil && len(names) > 1 {
		// Each failure has had its line.
		return infos, &codeError{code: exitCodeOf(first)}
	}
	return infos, first
}

// stateCommand is suspend and resume: act, then print the new states.
func (a *app) stateCommand(use, short, verb string, fn func(ctx context.Context, c *sandpod.Client, name string) (*sandpod.Sandbox, error)) *cobra.Command {
	return &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              minArgs(1, "one or more sandbox NAMEs"),
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			infos, err := a.eachSandbox(cmd.Context(), args, verb, fn)
			if len(infos) > 0 {
				if perr := a.printSandboxes(format, infos, len(args) == 1, nil); perr != nil {
					return perr
				}
			}
			return err
		},
	}
}

func (a *app) suspendCommand() *cobra.Command {
	return a.stateCommand("suspend NAME...", "stop a sandbox's processes and keep its files and name", "suspending",
		func(ctx context.Context, c *sandpod.Client, name string) (*sandpod.Sandbox, error) {
			return c.Suspend(ctx, name)
		})
}

func (a *app) resumeCommand() *cobra.Command {
	var noWait bool
	cmd := a.stateCommand("resume NAME...", "start a suspended sandbox again and wait until it is ready", "resuming",
		func(ctx context.Context, c *sandpod.Client, name string) (*sandpod.Sandbox, error) {
			var opts []sandpod.SandboxOption
			if noWait {
				opts = append(opts, sandpod.WithNoWait())
			}
			return c.Resume(ctx, name, opts...)
		})
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the server accepted the resume")
	return cmd
}

func (a *app) extendCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "extend NAME DURATION",
		Short:             "move a sandbox's shutdown time to now + DURATION (30m, 2h, 7d)",
		Args:              exactArgs("NAME", "DURATION"),
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			d, err := parseDuration("extend", args[1])
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			sb, err := c.Extend(cmd.Context(), args[0], d)
			if err != nil {
				return a.commandError(err)
			}
			return a.printSandboxes(format, []sandpod.Info{sb.Info()}, true, nil)
		},
	}
}

func (a *app) rmCommand() *cobra.Command {
	var ignoreMissing bool
	cmd := &cobra.Command{
		Use:               "rm NAME...",
		Aliases:           []string{"delete"},
		Short:             "delete sandboxes and their files",
		Args:              minArgs(1, "one or more sandbox NAMEs"),
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			var deleted []string
			_, err = a.eachSandbox(cmd.Context(), args, "deleting", func(ctx context.Context, c *sandpod.Client, name string) (*sandpod.Sandbox, error) {
				err := c.Delete(ctx, name)
				if ignoreMissing && errors.Is(err, sandpod.ErrSandboxNotFound) {
					return nil, nil
				}
				if err == nil {
					deleted = append(deleted, name)
				}
				return nil, err
			})
			switch format {
			case "json", "yaml":
				if deleted == nil {
					deleted = []string{}
				}
				if perr := writeData(a.out, format, map[string]any{"deleted": deleted}); perr != nil {
					return perr
				}
			case "name":
				for _, n := range deleted {
					fmt.Fprintln(a.out, n)
				}
			default:
				for _, n := range deleted {
					fmt.Fprintf(a.out, "deleted %s\n", n)
				}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&ignoreMissing, "ignore-not-found", false, "a sandbox that does not exist is not an error")
	return cmd
}
