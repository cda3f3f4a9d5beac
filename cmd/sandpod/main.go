// Command sandpod is the one binary of sandpod: the server subcommands
// `serve` (bridge + local engine), `bridge`, `agent` (the in-sandbox
// server), `controller` (Kubernetes), `state`, `purge` and `version`, each
// in its own file with its own flags; and the CLI for people (claim, ls,
// exec, cp, shell, ...) in package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandpod/sandpod/cmd/sandpod/cli"
)

// command is one server subcommand: it parses its own flags from args.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	// The server subcommands run exactly as they always have; everything
	// else (the user commands, help, completion) is the CLI's.
	if len(os.Args) >= 2 {
		if cmd, ok := commands[os.Args[1]]; ok {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			code := cmd.run(ctx, os.Args[2:])
			stop()
			os.Exit(code)
		}
	}
	servers := make([]cli.Server, 0, len(commands))
	for name, c := range commands {
		servers = append(servers, cli.Server{Name: name, Summary: c.summary, Run: c.run})
	}
	os.Exit(cli.Main(os.Args[1:], servers))
}
