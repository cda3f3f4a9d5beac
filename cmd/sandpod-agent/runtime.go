package main

import (
	"runtime/debug"
	"strconv"
)

// tuneRuntime sets the collector for a mostly idle process whose heap is a
// few MiB: see runtimeSettings. SANDPOD_AGENT_GOGC and
// SANDPOD_AGENT_MEMLIMIT (bytes) override it, for measuring.
func tuneRuntime(getenv func(string) string) {
	gc, limit := runtimeSettings(getenv)
	debug.SetGCPercent(gc)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
}

// Defaults: chosen by measurement (docs/performance.md).
const (
	defaultGCPercent = 100
	defaultMemLimit  = 0
)

func runtimeSettings(getenv func(string) string) (gcPercent int, memLimit int64) {
	gcPercent, memLimit = defaultGCPercent, defaultMemLimit
	if v, err := strconv.Atoi(getenv("SANDPOD_AGENT_GOGC")); err == nil {
		gcPercent = v
	}
	if v, err := strconv.ParseInt(getenv("SANDPOD_AGENT_MEMLIMIT"), 10, 64); err == nil {
		memLimit = v
	}
	return gcPercent, memLimit
}
