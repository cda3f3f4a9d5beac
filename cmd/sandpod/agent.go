package main

import "github.com/sandpod/sandpod/core/agent"

// `sandpod agent` stays for pods and engines that run the full binary as the
// agent; cmd/sandpod-agent is the same agent without the rest.
func init() {
	register("agent", "run the in-sandbox agent (started by the engine or the pod)", agent.Command)
}
