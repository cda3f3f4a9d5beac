package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/sandpod/sandpod/core/engine"
)

func init() {
	register("purge", "stop every sandbox of a local state directory (serve must not be running)", runPurge)
}

func runPurge(_ context.Context, args []string) int {
	fs := flag.NewFlagSet("purge", flag.ContinueOnError)
	stateDir := fs.String("state-dir", defaultStateDir(), "the state directory of a stopped `sandpod serve`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	n, err := engine.Purge(*stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandpod purge:", err)
		return 1
	}
	fmt.Printf("stopped %d sandbox process trees in %s (files kept)\n", n, *stateDir)
	return 0
}
