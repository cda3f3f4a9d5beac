package kube

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

type patchOnly struct{ err error }

func (p patchOnly) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return p.err
}

// The trace of a claim is one debug line with each stage, the patch's own
// time and size, and the total; at the info level there is no trace at all
// (nil: nothing measured, nothing allocated, no line).
func TestClaimTrace(t *testing.T) {
	for _, tc := range []struct {
		level    slog.Level
		patchErr error
		want     []string
	}{
		{slog.LevelInfo, nil, nil},
		{slog.LevelDebug, nil, []string{`msg="claim timing"`, "template=", "take=", "patch=", "patch_bytes=", "total=", "warm=true"}},
		{slog.LevelDebug, errors.New("refused"), []string{"patch=", "warm=false", "err=refused"}},
	} {
		var out bytes.Buffer
		b := &Backend{log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: tc.level}))}
		ctx := context.Background()
		tr := b.traceClaim(ctx)
		if (tr == nil) != (tc.level > slog.LevelDebug) {
			t.Fatalf("level %s: trace %v", tc.level, tr)
		}
		tr.mark("template")
		sb := &v1alpha1.Sandbox{}
		err := tr.writer(patchOnly{tc.patchErr}).Patch(ctx, sb, client.RawPatch("application/merge-patch+json", []byte(`{"a":1}`)))
		if !errors.Is(err, tc.patchErr) {
			t.Fatalf("patch error %v, want %v", err, tc.patchErr)
		}
		tr.mark("take")
		tr.done(ctx, b.log, err == nil, err)
		line := out.String()
		if tc.want == nil && line != "" {
			t.Errorf("level %s: logged %q", tc.level, line)
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("level %s: %q lacks %q", tc.level, line, w)
			}
		}
		if tc.want != nil && !strings.Contains(line, "patch_bytes=7") {
			t.Errorf("patch size not recorded: %q", line)
		}
	}
}
