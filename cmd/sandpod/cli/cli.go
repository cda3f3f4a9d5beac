// Package cli is the command line for people: `sandpod claim`, `ls`, `exec`,
// `cp`, `shell`... built on the Go client (clients/go). The server
// subcommands (`serve`, `bridge`, `controller`, ...) keep their own flag
// parsing in package main; they are listed here only so that help and shell
// completion know them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// Server is a server subcommand of package main (serve, bridge, controller,
// agent, ...), run with its own flags.
type Server struct {
	Name, Summary string
	Run           func(ctx context.Context, args []string) int
}

// app is one run of the CLI: its streams, the global flags, the client it
// dials on first use, and who gets Ctrl-C.
type app struct {
	in       io.Reader
	out, err io.Writer
	getenv   func(string) string

	flags globalFlags

	mu       sync.Mutex
	settings *Settings
	client   *sandpod.Client
	// onSignal, when set, sees SIGINT/SIGTERM first (exec and shell forward
	// them to the command in the sandbox); returning false cancels the run.
	onSignal    func(os.Signal) bool
	interrupted bool
}

// Main runs the CLI with args (without the program name) and returns the
// process's exit code.
func Main(args []string, servers []Server) int {
	a := &app{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			a.mu.Lock()
			h := a.onSignal
			a.mu.Unlock()
			if s != syscall.SIGHUP && h != nil && h(s) {
				continue
			}
			a.mu.Lock()
			a.interrupted = true
			a.mu.Unlock()
			cancel()
		}
	}()
	code := a.run(ctx, args, servers)
	a.mu.Lock()
	if a.client != nil {
		_ = a.client.Close()
	}
	a.mu.Unlock()
	return code
}

func (a *app) run(ctx context.Context, args []string, servers []Server) int {
	root := a.rootCommand(servers)
	root.SetArgs(args)
	root.SetIn(a.in)
	root.SetOut(a.out)
	root.SetErr(a.err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	a.mu.Lock()
	interrupted := a.interrupted
	a.mu.Unlock()
	if interrupted && ctx.Err() != nil {
		fmt.Fprintln(a.err, "sandpod: interrupted")
		return ExitInterrupted
	}
	var ce *codeError
	if !errors.As(err, &ce) {
		// Not from a command's RunE: cobra's parsing (unknown command or
		// flag, wrong number of arguments).
		ce = usageErrorf("%s", oneLine(err.Error()))
	}
	if ce.msg != "" {
		fmt.Fprintln(a.err, ce.msg)
	}
	if ce.code == ExitUsage && ce.msg != "" {
		if path := commandPath(root, args); path != "" {
			fmt.Fprintf(a.err, "Run '%s --help' for usage.\n", path)
		}
	}
	return ce.code
}

// oneLine folds cobra's "Did you mean this?" block into the error line.
func oneLine(msg string) string {
	const hint = "\n\nDid you mean this?\n"
	if i := strings.Index(msg, hint); i >= 0 {
		return msg[:i] + " (did you mean " + strings.Join(strings.Fields(msg[i+len(hint):]), " or ") + "?)"
	}
	return strings.TrimSpace(msg)
}

// commandPath names the subcommand args address, for the usage hint.
func commandPath(root *cobra.Command, args []string) string {
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return root.Name()
	}
	return c.CommandPath()
}

const (
	groupSandboxes = "sandboxes"
	groupCatalog   = "catalog"
	groupServer    = "server"
)

func (a *app) rootCommand(servers []Server) *cobra.Command {
	root := &cobra.Command{
		Use:   "sandpod",
		Short: "sandboxes for AI agents: claim, exec, copy files, suspend, resume",
		Long: `sandpod hands out isolated sandboxes from warm pools and runs commands in them.

The user commands talk to a sandpod server (` + "`sandpod serve`" + ` locally, or the bridge
on Kubernetes) at --address, $SANDPOD_ADDRESS, the config file's address, or
` + sandpod.DefaultAddress + `. See docs/cli.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// No arguments: the help, as a usage error (the server subcommands
		// always answered so).
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(a.err)
			_ = cmd.Help()
			return &codeError{code: ExitUsage}
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	root.CompletionOptions.HiddenDefaultCmd = false
	a.flags.register(root)
	root.AddGroup(
		&cobra.Group{ID: groupSandboxes, Title: "Sandboxes:"},
		&cobra.Group{ID: groupCatalog, Title: "Templates and pools:"},
		&cobra.Group{ID: groupServer, Title: "Running the server (each parses its own flags: sandpod COMMAND -h):"},
	)
	root.SetHelpCommandGroupID("")
	root.SetCompletionCommandGroupID("")

	for _, c := range []*cobra.Command{
		a.claimCommand(), a.lsCommand(), a.getCommand(), a.execCommand(), a.shellCommand(),
		a.cpCommand(), a.suspendCommand(), a.resumeCommand(), a.extendCommand(), a.rmCommand(),
		a.exposeCommand(), a.logsCommand(), a.watchCommand(),
	} {
		c.GroupID = groupSandboxes
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{a.templatesCommand(), a.poolsCommand()} {
		c.GroupID = groupCatalog
		root.AddCommand(c)
	}
	root.AddCommand(a.mcpCommand())
	root.AddCommand(a.configCommand())
	root.AddCommand(a.preflightCommand())
	root.AddCommand(a.uninstallCheckCommand())
	// Every error out of a command gets its exit code here, so that an
	// error run() sees without one is cobra's (parsing: a usage error).
	for _, c := range root.Commands() {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error { return a.commandError(run(cmd, args)) }
		}
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
	for _, l := range servers {
		root.AddCommand(serverCommand(l))
	}
	return root
}

// serverCommand lists a server subcommand. main runs those before the CLI
// sees them, so this one runs only through paths main does not take.
func serverCommand(l Server) *cobra.Command {
	c := &cobra.Command{
		Use:                l.Name,
		Short:              l.Summary,
		GroupID:            groupServer,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := l.Run(cmd.Context(), args); code != 0 {
				return &codeError{code: code}
			}
			return nil
		},
	}
	// `sandpod help serve` shows serve's own flags.
	c.SetHelpFunc(func(cmd *cobra.Command, _ []string) { l.Run(cmd.Context(), []string{"-h"}) })
	return c
}

// setSignalHandler routes SIGINT and SIGTERM to h until the returned func
// is called.
func (a *app) setSignalHandler(h func(os.Signal) bool) func() {
	a.mu.Lock()
	a.onSignal = h
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		a.onSignal = nil
		a.mu.Unlock()
	}
}

// isTerminal reports whether f is a terminal (false for anything that is
// not an *os.File).
func isTerminal(f any) bool {
	if file, ok := f.(*os.File); ok {
		return term.IsTerminal(int(file.Fd()))
	}
	return false
}
