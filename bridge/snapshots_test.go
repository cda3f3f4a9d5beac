package bridge

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestCheckForkSourceAndCount(t *testing.T) {
	cases := []struct {
		snapshot, sandbox string
		count             int32
		wantErr           string
	}{
		{snapshot: "s", count: 1},
		{sandbox: "sb", count: MaxForks},
		{count: 1, wantErr: "snapshot: name a snapshot or a sandbox"},
		{snapshot: "s", sandbox: "sb", count: 1, wantErr: "not both"},
		{snapshot: "Bad_Name", count: 1, wantErr: "snapshot:"},
		{sandbox: "../x", count: 1, wantErr: "sandbox:"},
		{snapshot: "s", count: 0, wantErr: "count: must be between 1 and 256, got 0"},
		{snapshot: "s", count: MaxForks + 1, wantErr: "got 257"},
		{snapshot: "s", count: -1, wantErr: "count"},
	}
	for _, tc := range cases {
		err := firstError(checkForkSource(tc.snapshot, tc.sandbox), checkForkCount(tc.count))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: %v", tc, err)
		case tc.wantErr != "" && (status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: got %v, want INVALID_ARGUMENT with %q", tc, err, tc.wantErr)
		}
	}
}

// The snapshot calls are checked before any backend sees them: a nil
// backend would panic if a bad request reached it.
func TestSnapshotCallsValidateAtTheEdge(t *testing.T) {
	s := New(nil)
	ctx := context.Background()
	bad := map[string]error{
		"snapshot without sandbox": second(s.SnapshotSandbox(ctx, &sandpodv1.SnapshotSandboxRequest{})),
		"snapshot bad name":        second(s.SnapshotSandbox(ctx, &sandpodv1.SnapshotSandboxRequest{Sandbox: "a", Name: "A"})),
		"snapshot reserved label":  second(s.SnapshotSandbox(ctx, &sandpodv1.SnapshotSandboxRequest{Sandbox: "a", Labels: map[string]string{"sandpod.dev/x": "1"}})),
		"snapshot long request id": second(s.SnapshotSandbox(ctx, &sandpodv1.SnapshotSandboxRequest{Sandbox: "a", RequestId: strings.Repeat("x", MaxRequestIDLen+1)})),
		"get without name":         second(s.GetSnapshot(ctx, &sandpodv1.GetSnapshotRequest{})),
		"list bad selector":        second(s.ListSnapshots(ctx, &sandpodv1.ListSnapshotsRequest{LabelSelector: "a in ("})),
		"list bad page size":       second(s.ListSnapshots(ctx, &sandpodv1.ListSnapshotsRequest{PageSize: MaxPageSize + 1})),
		"delete bad namespace":     second(s.DeleteSnapshot(ctx, &sandpodv1.DeleteSnapshotRequest{Name: "s", Namespace: "A"})),
		"fork too many":            second(s.ForkSandbox(ctx, &sandpodv1.ForkSandboxRequest{Snapshot: "s", Count: 1000})),
		"fork bad env":             second(s.ForkSandbox(ctx, &sandpodv1.ForkSandboxRequest{Snapshot: "s", Count: 1, Env: map[string]string{"1A": "x"}})),
		"restore without snapshot": second(s.RestoreSandbox(ctx, &sandpodv1.RestoreSandboxRequest{Name: "a"})),
		"create snapshot bad name": second(s.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Snapshot: "A"})),
		"claim without either":     second(s.ClaimSandbox(ctx, &sandpodv1.ClaimSandboxRequest{})),
	}
	for name, err := range bad {
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: got %v, want INVALID_ARGUMENT", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
