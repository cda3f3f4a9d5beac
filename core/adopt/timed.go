package adopt

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Timed is w with each patch's duration told to observe (the claim traces
// of the bridge and the controller).
func Timed(w Writer, observe func(took time.Duration, obj client.Object, patch client.Patch)) Writer {
	return timedWriter{w: w, observe: observe}
}

type timedWriter struct {
	w       Writer
	observe func(time.Duration, client.Object, client.Patch)
}

func (tw timedWriter) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	t0 := time.Now()
	err := tw.w.Patch(ctx, obj, p, opts...)
	tw.observe(time.Since(t0), obj, p)
	return err
}
