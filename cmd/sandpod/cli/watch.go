package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func (a *app) watchCommand() *cobra.Command {
	var (
		selector, phases, pool, template, timeout string
		all, changesOnly                          bool
	)
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "print a line for every change to the sandboxes, until Ctrl-C",
		Long: `Stream changes to the namespace's sandboxes (WatchSandboxes): one line per
change with the time, the event (Added, Modified, Deleted), the sandbox's
name, phase and message. The sandboxes that exist are listed first (Added),
unless --changes-only. -o json prints one JSON object a line
({"type": ..., "sandbox": {...}}), -o yaml one document per event. Ctrl-C or
--timeout end it with exit code 0.`,
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
			ctx := cmd.Context()
			if timeout != "" {
				d, err := parseDuration("--timeout", timeout)
				if err != nil {
					return err
				}
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			c, err := a.dial(ctx)
			if err != nil {
				return err
			}
			// Ctrl-C is how a watch ends: exit 0, not 130.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer a.setSignalHandler(func(os.Signal) bool { cancel(); return true })()
			return a.watch(ctx, c, format, f, all, changesOnly, selector)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&selector, "selector", "l", "", "label selector, e.g. team=rl")
	fl.StringVar(&phases, "phase", "", "only changes that leave a sandbox in one of these phases (comma-separated)")
	fl.StringVar(&pool, "pool", "", "only sandboxes from this warm pool (includes its unclaimed members)")
	fl.StringVar(&template, "template", "", "only sandboxes of this template")
	fl.BoolVarP(&all, "all", "A", false, "include unclaimed warm pool members")
	fl.BoolVar(&changesOnly, "changes-only", false, "do not list the sandboxes that exist first")
	fl.StringVar(&timeout, "timeout", "", "stop after this long (default: until Ctrl-C)")
	_ = cmd.RegisterFlagCompletionFunc("pool", a.completePools)
	_ = cmd.RegisterFlagCompletionFunc("template", a.completeTemplates)
	return cmd
}

func (a *app) watch(ctx context.Context, c *sandpod.Client, format string, f *filter, all, changesOnly bool, selector string) error {
	opts := []sandpod.ListOption{sandpod.WithLabelSelector(selector)}
	if all || f.pool != "" {
		opts = append(opts, sandpod.WithPoolMembers())
	}
	if !changesOnly {
		opts = append(opts, sandpod.WithInitialEvents())
	}
	wide := format == "wide"
	var t *streamTable
	if format == "table" || wide {
		h := []string{"TIME", "EVENT", "NAME", "PHASE", "TEMPLATE", "SHUTDOWN"}
		if wide {
			h = append(h, "LABELS")
		}
		t = newStreamTable(a.out, []int{8, 8, 20, 11, 10, 8, 0}, append(h, "MESSAGE")...)
	}
	for ev, err := range c.Watch(ctx, opts...) {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return a.commandError(err)
		}
		if !f.keep(ev.Sandbox, all) {
			continue
		}
		switch format {
		case "json":
			if err := writeLine(a.out, eventView{Type: string(ev.Type), Sandbox: viewOf(ev.Sandbox)}); err != nil {
				return err
			}
		case "yaml":
			fmt.Fprintln(a.out, "---")
			if err := writeData(a.out, "yaml", eventView{Type: string(ev.Type), Sandbox: viewOf(ev.Sandbox)}); err != nil {
				return err
			}
		case "name":
			fmt.Fprintf(a.out, "%s %s\n", ev.Type, ev.Sandbox.Name)
		default:
			now := time.Now()
			i := ev.Sandbox
			row := []string{now.Format(time.TimeOnly), string(ev.Type), i.Name, string(i.Phase), orDash(i.Template), until(i.ShutdownTime, now)}
			if wide {
				row = append(row, orDash(labelString(i.Labels)))
			}
			t.row(append(row, orDash(i.Message))...)
		}
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
