package main

import (
	"context"
	"fmt"

	"github.com/sandpod/sandpod/core/agent"
)

func init() {
	register("version", "print the version", func(context.Context, []string) int {
		fmt.Println("sandpod", agent.Version)
		return 0
	})
}
