package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sandpod/sandpod/core/controller"
)

func init() {
	register("controller", "run the Kubernetes controller (CRD reconcilers)", func(ctx context.Context, args []string) int {
		if err := runController(ctx, args); err != nil {
			fmt.Fprintln(os.Stderr, "sandpod controller:", err)
			return 1
		}
		return 0
	})
}

// runController parses the controller's flags from args and runs it until
// ctx is done: --kubeconfig, --metrics-bind-address,
// --health-probe-bind-address, --leader-elect, --runtime-class-policy
// none|require|default, --default-runtime-class, --agent-image (see
// `sandpod controller -h`).
func runController(ctx context.Context, args []string) error {
	return controller.Run(ctx, args)
}
