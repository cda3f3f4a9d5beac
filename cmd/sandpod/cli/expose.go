package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// exposed is what a port preview answers.
type exposed struct {
	Sandbox  string `json:"sandbox"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
	URL      string `json:"url"`
}

// errExposeUnsupported is the answer of a server without port previews.
var errExposeUnsupported = exitErrorf(ExitUnsupported, "expose: not available on this server: it has no port previews (ExposePort)")

// exposePort asks the server for a URL that reaches port in the sandbox.
// It is the seam for ExposePort (issue 18, port previews): until the Go
// client has that call, it answers as a server without it does. Wire it to
// the client's ExposePort; an Unimplemented from an older server still
// prints "not available on this server".
var exposePort = func(_ context.Context, _ *sandpod.Sandbox, _ int, _ string) (exposed, error) {
	return exposed{}, errExposeUnsupported
}

func (a *app) exposeCommand() *cobra.Command {
	var protocol string
	cmd := &cobra.Command{
		Use:   "expose NAME PORT",
		Short: "print a URL that reaches a port inside the sandbox (port previews)",
		Long: `Ask the server for a preview URL of a TCP port inside the sandbox (a web app,
a Jupyter server, a dev server). The URL is served by the bridge (or by
sandpod serve) and closes when the sandbox is suspended or deleted. A server
without port previews answers "not available on this server" (exit code 79).`,
		Example:           `  sandpod expose sb 8888`,
		Args:              exactArgs("NAME", "PORT"),
		ValidArgsFunction: a.completeFirstSandbox,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat("table", "wide", "name", "json", "yaml")
			if err != nil {
				return err
			}
			port, err := parsePort(args[1])
			if err != nil {
				return err
			}
			if protocol != "http" && protocol != "tcp" {
				return usageErrorf("--protocol %q: use http or tcp", protocol)
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			// A typo in the name says "not found", also on a server
			// without previews.
			sb, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return a.commandError(asOp("expose", err))
			}
			ex, err := exposePort(cmd.Context(), sb, port, protocol)
			if errors.Is(err, sandpod.ErrUnimplemented) {
				return errExposeUnsupported
			}
			if err != nil {
				return a.commandError(err)
			}
			switch format {
			case "json", "yaml":
				return writeData(a.out, format, ex)
			case "name":
				fmt.Fprintln(a.out, ex.URL)
				return nil
			}
			t := newTable(a.out, "SANDBOX", "PORT", "PROTOCOL", "URL")
			t.row(ex.Sandbox, strconv.Itoa(ex.Port), ex.Protocol, ex.URL)
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&protocol, "protocol", "http", "http (also WebSocket) or tcp")
	_ = cmd.RegisterFlagCompletionFunc("protocol", cobra.FixedCompletions([]string{"http", "tcp"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
