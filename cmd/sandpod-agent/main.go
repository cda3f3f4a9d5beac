// Command sandpod-agent is the in-sandbox agent alone: core/agent and what
// it imports, without the Kubernetes client, the HTTP gateway, the CLI or
// the store of the full sandpod binary. One copy runs as each sandbox's init
// and another as its agent, so what it costs idle is paid twice per sandbox:
// it starts faster and holds less memory than `sandpod agent`, which takes
// the same arguments (a leading "agent" word is accepted, so a pod or an
// engine can run either binary with one command line).
//
// The Go runtime keeps its defaults (GOGC 100, no memory limit): measured
// over idle sandboxes, a lower GOGC or a soft memory limit (4 to 16 MiB)
// held 0.5 to 1.8 MiB more per sandbox, not less (an idle agent's heap is
// below the collector's 4 MiB floor, and earlier collections during start
// only touch more pages); what a burst of work leaves is given back by the
// agent once idle instead (core/agent idleTrim). docs/performance.md has
// the figures.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandpod/sandpod/core/agent"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "agent" {
		args = args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := agent.Command(ctx, args)
	stop()
	os.Exit(code)
}
