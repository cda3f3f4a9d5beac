package claim

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sandpod/sandpod/core/adopt"
)

// passTrace times the stages of a claim's binding pass for a debug line
// (`sandpod controller -v=1`): where a SandboxClaim's milliseconds go inside
// the controller, against what its user measures, as the bridge's claim
// timing does. Off (nil) unless the logger takes V(1) lines, so a pass pays
// nothing for it.
type passTrace struct {
	log         logr.Logger
	start, last time.Time
	kv          []any
}

func tracePass(ctx context.Context) *passTrace {
	lg := log.FromContext(ctx).V(1)
	if !lg.Enabled() {
		return nil
	}
	now := time.Now()
	return &passTrace{log: lg, start: now, last: now}
}

// mark ends the stage named stage (its time since the previous mark).
func (t *passTrace) mark(stage string) {
	if t == nil {
		return
	}
	now := time.Now()
	t.kv = append(t.kv, stage, now.Sub(t.last).String())
	t.last = now
}

// add records a figure measured apart from the stages.
func (t *passTrace) add(key string, v any) {
	if t != nil {
		t.kv = append(t.kv, key, v)
	}
}

// done logs the pass's line if it bound the claim (the passes that only
// look are not worth a line each).
func (t *passTrace) done(v claimView) {
	if t == nil || !v.Adopted {
		return
	}
	t.log.Info("claim timing", append(t.kv, "total", time.Since(t.start).String(), "sandbox", v.Name, "warm", v.Warm)...)
}

// writer is the take's writer, timing each patch when traced.
func (t *passTrace) writer(w adopt.Writer) adopt.Writer {
	if t == nil {
		return w
	}
	return adopt.Timed(w, func(took time.Duration, _ client.Object, _ client.Patch) {
		t.add("take_patch", took.String())
	})
}
