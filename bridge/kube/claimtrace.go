package kube

import (
	"context"
	"log/slog"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/adopt"
)

// claimTrace times the stages of one ClaimSandbox for a debug log line
// (`sandpod bridge --log-level=debug`): where a claim's milliseconds go
// inside the bridge, against what its caller measures. Off (nil) unless the
// logger takes debug lines, so a claim pays nothing for it.
type claimTrace struct {
	start, last time.Time
	attrs       []any
}

func (b *Backend) traceClaim(ctx context.Context) *claimTrace {
	if b.log == nil || !b.log.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	now := time.Now()
	return &claimTrace{start: now, last: now}
}

// mark ends the stage named stage (its time since the previous mark).
func (t *claimTrace) mark(stage string) {
	if t == nil {
		return
	}
	now := time.Now()
	t.attrs = append(t.attrs, slog.Duration(stage, now.Sub(t.last)))
	t.last = now
}

// add records a figure measured apart from the stages (the patch's own time).
func (t *claimTrace) add(key string, v any) {
	if t != nil {
		t.attrs = append(t.attrs, key, v)
	}
}

func (t *claimTrace) done(ctx context.Context, log *slog.Logger, warm bool, err error) {
	if t == nil {
		return
	}
	attrs := append(t.attrs, slog.Duration("total", time.Since(t.start)), "warm", warm)
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	log.DebugContext(ctx, "claim timing", attrs...)
}

// writer is the take's writer, timing each patch when traced.
func (t *claimTrace) writer(w adopt.Writer) adopt.Writer {
	if t == nil {
		return w
	}
	return adopt.Timed(w, func(took time.Duration, obj client.Object, p client.Patch) {
		t.add("patch", took)
		if data, err := p.Data(obj); err == nil {
			t.add("patch_bytes", len(data))
		}
	})
}
