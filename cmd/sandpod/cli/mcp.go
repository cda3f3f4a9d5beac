package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandpod/sandpod/bridge"
	sandpod "github.com/sandpod/sandpod/clients/go"
	mcpserver "github.com/sandpod/sandpod/cmd/sandpod/mcp"
	"github.com/sandpod/sandpod/core/agent"
)

// mcpFlags are `sandpod mcp`'s own flags.
type mcpFlags struct {
	listen, tokenFile, template string
	lease, sessionTimeout       time.Duration
	maxStreams                  int
}

func (a *app) mcpCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "serve sandboxes as tools to MCP hosts (Model Context Protocol), over stdio or HTTP",
		Long: `Run a Model Context Protocol server whose tools claim, list and delete sandboxes,
run commands and Python, read, write and list files, expose ports, snapshot,
restore and fork, on the sandpod server at --address (as every command).

Without --listen it serves one MCP session on standard input and output: the
command line an MCP host starts. With --listen it serves streamable HTTP at
http://ADDR/mcp, with the same bearer tokens as the API (--token-file).

An MCP session that names no sandbox gets one from --template on its first
call; the sandboxes a session claims are deleted when it ends (end of input,
the HTTP session closed or idle for --session-timeout, or the server
stopped). See docs/agents.md.`,
		Example: `  sandpod mcp
  sandpod mcp --address sandpod.example.com:443 --template python
  sandpod mcp --listen 127.0.0.1:50055 --token-file /etc/sandpod/tokens`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.listen == "" && (f.tokenFile != "" || cmd.Flags().Changed("session-timeout") || cmd.Flags().Changed(bridge.StreamFlag[2:])) {
				return usageErrorf("--token-file, --session-timeout and %s go with --listen (HTTP)", bridge.StreamFlag)
			}
			return a.runMCP(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "", "serve streamable HTTP on `ADDR` (e.g. 127.0.0.1:50055) at /mcp instead of stdio")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --listen: `FILE` of bearer tokens HTTP callers must present, in the format of sandpod serve's --token-file (needed off loopback)")
	fl.StringVar(&f.template, "template", mcpserver.DefaultTemplate, "template of the sandbox a session gets when its first call names none (and claim_sandbox's default)")
	fl.DurationVar(&f.lease, "lease", mcpserver.DefaultLease, "lease of a session's sandboxes, renewed while it lasts: how long they outlive a server killed before it deleted them (0: none, only their TTL)")
	fl.DurationVar(&f.sessionTimeout, "session-timeout", mcpserver.DefaultSessionTimeout, "with --listen: end an HTTP session that sent nothing for this long, deleting its sandboxes (0: never)")
	fl.IntVar(&f.maxStreams, bridge.StreamFlag[2:], bridge.DefaultStreamsPerCaller, "with --listen: most HTTP requests (session event streams, tool calls) one caller (token) has in flight; more are answered 429 (0: no limit)")
	_ = cmd.RegisterFlagCompletionFunc("template", a.completeTemplates)
	return cmd
}

func (a *app) runMCP(ctx context.Context, f mcpFlags) error {
	var authns []bridge.Authenticator
	if f.tokenFile != "" {
		tf, err := bridge.NewTokenFile(f.tokenFile)
		if err != nil {
			return exitErrorf(ExitConfig, "%v", err)
		}
		authns = append(authns, tf)
	}
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(a.err, nil))
	s := mcpserver.New(c, mcpserver.Options{Template: f.template, Lease: f.lease, Version: agent.Version, Log: log})
	if f.listen == "" {
		checkTemplate(ctx, log, c, f.template)
		if err := s.RunStdio(ctx, readCloser(a.in), nopWriteCloser{a.out}); err != nil && ctx.Err() == nil {
			return a.commandError(err)
		}
		return nil
	}
	o := mcpserver.HTTPOptions{Authenticators: authns, Namespace: c.Namespace(), SessionTimeout: f.sessionTimeout,
		Streams: bridge.NewStreamLimiter(f.maxStreams, "sandpod mcp")}
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usageErrorf("--listen %s: %v", f.listen, err)
	}
	if err := mcpserver.CheckListener(lis, o); err != nil {
		lis.Close()
		return usageErrorf("%v", err)
	}
	checkTemplate(ctx, log, c, f.template)
	if err := s.ServeHTTP(ctx, lis, o); err != nil {
		return a.commandError(err)
	}
	return nil
}

// checkTemplate warns, without failing, when the server is not reachable
// yet or has no such template: an MCP host shows the server's stderr, and
// the tools would fail on the first call.
func checkTemplate(ctx context.Context, log *slog.Logger, c *sandpod.Client, template string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ts, err := c.Templates(ctx)
	if err != nil {
		log.Warn("the sandpod server could not list its templates; tool calls will fail until it can", "err", err)
		return
	}
	if !slices.ContainsFunc(ts, func(t sandpod.Template) bool { return t.Name == template }) {
		log.Warn("the sandpod server has no such template: the first call that names no sandbox will fail", "template", template)
	}
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps the MCP SDK from closing the CLI's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
