package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func runOut(t *testing.T, ctx context.Context, sb *sandpod.Sandbox, cmd string) string {
	t.Helper()
	res, err := sb.Run(ctx, cmd)
	if err != nil {
		t.Fatalf("%s: run %q: %v", sb, cmd, err)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// Snapshot a workspace, fork it, write in the forks, restore the source:
// each fork starts with the files, no write crosses between them, a retry
// with the same request id makes no extra forks, a snapshot in use is not
// deleted, and the typed errors match.
func TestSnapshotForkRestore(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	src, err := c.Create(ctx, "python", sandpod.WithLabels(map[string]string{"test": "snapfork"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Delete(context.Background()) })
	runOut(t, ctx, src, "echo seed > state.txt")

	snap, err := src.Snapshot(ctx, sandpod.WithLabels(map[string]string{"test": "snapfork"}))
	if err != nil {
		t.Fatal(err)
	}
	if info := snap.Info(); info.Phase != "Ready" || info.Memory || info.SourceSandbox != src.Name() || info.SizeBytes != 5 {
		t.Errorf("snapshot info: %+v", info)
	}
	forks, err := c.Fork(ctx, snap, 3, sandpod.WithRequestID("go-fork-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := forks.DeleteAll(context.Background()); err != nil {
			t.Error(err)
		}
		if err := snap.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	again, err := c.Fork(ctx, snap, 3, sandpod.WithRequestID("go-fork-1"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range forks.Sandboxes {
		if again.Sandboxes[i].Name() != f.Name() {
			t.Errorf("retry made fork %s, first call %s", again.Sandboxes[i].Name(), f.Name())
		}
		if got := runOut(t, ctx, f, "cat state.txt"); got != "seed" {
			t.Errorf("fork %d reads %q", i, got)
		}
		runOut(t, ctx, f, fmt.Sprintf("echo fork%d > state.txt", i))
	}
	for i, f := range forks.Sandboxes {
		if got := runOut(t, ctx, f, "cat state.txt"); got != fmt.Sprintf("fork%d", i) {
			t.Errorf("fork %d reads %q after the others wrote", i, got)
		}
	}
	if got := runOut(t, ctx, src, "cat state.txt"); got != "seed" {
		t.Errorf("source reads %q", got)
	}

	runOut(t, ctx, src, "echo later > state.txt")
	if err := src.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if got := runOut(t, ctx, src, "cat state.txt"); got != "seed" || src.Info().Snapshot != snap.Name() {
		t.Errorf("after restore: %q, info.Snapshot %q", got, src.Info().Snapshot)
	}

	if err := snap.Delete(ctx); !errors.Is(err, sandpod.ErrSnapshotInUse) || !errors.Is(err, sandpod.ErrFailedPrecondition) {
		if !strings.Contains(snap.Info().Storage, "copy") {
			t.Errorf("delete of a snapshot in use: %v", err)
		}
	}
	if _, err := c.GetSnapshot(ctx, "no-such-snapshot"); !errors.Is(err, sandpod.ErrSnapshotNotFound) || !errors.Is(err, sandpod.ErrNotFound) {
		t.Errorf("missing snapshot: %v", err)
	}
	if _, err := c.Fork(ctx, snap, 0); !errors.Is(err, sandpod.ErrInvalidArgument) {
		t.Errorf("fork of 0: %v", err)
	}
	if _, err := c.Claim(ctx, "python", sandpod.WithSnapshot(c.SnapshotNamed("no-such-snapshot"))); !errors.Is(err, sandpod.ErrSnapshotNotFound) {
		t.Errorf("claim from a missing snapshot: %v", err)
	}
	list, err := c.Snapshots(ctx, sandpod.WithLabelSelector("test=snapfork"))
	if err != nil || len(list) != 1 || list[0].Name() != snap.Name() {
		t.Errorf("snapshots: %v %v", list, err)
	}
	// A sandbox from a snapshot by Create.
	fromSnap, err := c.Create(ctx, "", sandpod.WithSnapshot(snap))
	if err != nil {
		t.Fatal(err)
	}
	if got := runOut(t, ctx, fromSnap, "cat state.txt"); got != "seed" || fromSnap.Info().Template != "python" {
		t.Errorf("created from snapshot: %q, template %q", got, fromSnap.Info().Template)
	}
	if err := fromSnap.Delete(ctx); err != nil {
		t.Error(err)
	}
	if err := src.Delete(ctx); err != nil {
		t.Error(err)
	}
}
