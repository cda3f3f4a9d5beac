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
// ctx is done. `sandpod controller -h` prints every flag from the flag set
// itself; docs/install.md has them in a table (TestControllerFlagsAreDocumented).
func runController(ctx context.Context, args []string) error {
	return controller.Run(ctx, args)
}
