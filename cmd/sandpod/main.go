// Command sandpod is the one binary of sandpod: `serve` (bridge + local
// engine), `bridge` and `controller` (Kubernetes), `agent` (the in-sandbox
// server) and the smaller commands `sandpod help` lists. Each subcommand
// lives in its own file and registers itself.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand: it parses its own flags from args.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "sandpod: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cmd.run(ctx, os.Args[2:])
	stop()
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: sandpod <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'sandpod <command> -h' for a command's flags.")
}
