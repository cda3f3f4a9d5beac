package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func (a *app) templatesCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "templates",
		Aliases: []string{"template"},
		Short:   "list the sandbox templates",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			ts, err := c.Templates(cmd.Context())
			if err != nil {
				return a.commandError(err)
			}
			switch format {
			case "json", "yaml":
				views := make([]templateView, 0, len(ts))
				for _, t := range ts {
					views = append(views, templateViewOf(t))
				}
				return writeData(a.out, format, map[string]any{"templates": views})
			case "name":
				for _, t := range ts {
					fmt.Fprintln(a.out, t.Name)
				}
				return nil
			}
			t := newTable(a.out, "NAME", "DEFAULT TTL", "IDLE SUSPEND", "AUTO RESUME", "NETWORK", "RUNTIME", "IMAGE")
			for _, x := range ts {
				network := "on"
				if x.NetworkIsolated {
					network = "none"
				}
				ttl, idle := "-", "-"
				if x.DefaultTTL > 0 {
					ttl = x.DefaultTTL.String()
				}
				if x.IdleTimeout > 0 {
					idle = x.IdleTimeout.String()
				}
				t.row(x.Name, ttl, idle, strconv.FormatBool(x.AutoResume), network, orDash(x.RuntimeClassName), orDash(x.Image))
			}
			return t.flush()
		},
	}
}

func (a *app) poolsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "pools",
		Aliases: []string{"pool"},
		Short:   "list the warm pools",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			ps, err := c.WarmPools(cmd.Context())
			if err != nil {
				return a.commandError(err)
			}
			switch format {
			case "json", "yaml":
				views := make([]poolView, 0, len(ps))
				for _, p := range ps {
					views = append(views, poolViewOf(p))
				}
				return writeData(a.out, format, map[string]any{"warmPools": views})
			case "name":
				for _, p := range ps {
					fmt.Fprintln(a.out, p.Name)
				}
				return nil
			}
			t := newTable(a.out, "NAME", "TEMPLATE", "DESIRED", "READY", "PENDING")
			for _, p := range ps {
				t.row(p.Name, p.Template, strconv.Itoa(p.Replicas), strconv.Itoa(p.ReadyReplicas), strconv.Itoa(p.PendingReplicas))
			}
			return t.flush()
		},
	}
}
