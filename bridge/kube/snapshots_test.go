package kube

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Every snapshot call, and a create or claim from a snapshot, is refused
// with UNIMPLEMENTED and a message naming what is missing; none is
// silently served without the snapshot (a create that ignored it would
// hand out an empty workspace).
func TestSnapshotCallsAreUnimplemented(t *testing.T) {
	b := &Backend{}
	ctx := context.Background()
	calls := map[string]error{
		"SnapshotSandbox": func() error {
			_, err := b.SnapshotSandbox(ctx, &sandpodv1.SnapshotSandboxRequest{Sandbox: "a"})
			return err
		}(),
		"GetSnapshot":    func() error { _, err := b.GetSnapshot(ctx, "default", "s"); return err }(),
		"ListSnapshots":  func() error { _, err := b.ListSnapshots(ctx, "default", nil); return err }(),
		"DeleteSnapshot": b.DeleteSnapshot(ctx, "default", "s"),
		"ForkSandbox": func() error {
			_, _, err := b.ForkSandbox(ctx, &sandpodv1.ForkSandboxRequest{Snapshot: "s", Count: 2})
			return err
		}(),
		"RestoreSandbox": func() error {
			_, err := b.RestoreSandbox(ctx, &sandpodv1.RestoreSandboxRequest{Name: "a", Snapshot: "s"})
			return err
		}(),
		"CreateSandbox": func() error {
			_, err := b.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "t", Snapshot: "s"})
			return err
		}(),
		"ClaimSandbox": func() error {
			_, _, err := b.ClaimSandbox(ctx, &sandpodv1.ClaimSandboxRequest{Template: "t", Snapshot: "s"})
			return err
		}(),
	}
	for name, err := range calls {
		st, _ := status.FromError(err)
		if st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), "SandboxSnapshot") || !strings.Contains(st.Message(), "VolumeSnapshot") {
			t.Errorf("%s: got %v, want UNIMPLEMENTED naming SandboxSnapshot and VolumeSnapshot", name, err)
		}
	}
}
