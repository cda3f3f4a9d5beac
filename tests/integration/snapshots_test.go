package integration

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// overlaysUnder lists the workspace overlay mounts below dir; their binds
// onto wsmount (the container's /workspace, swap_linux.go) are overlays too
// and are left out.
func overlaysUnder(t *testing.T, dir string) []string {
	var out []string
	for _, m := range mountinfoBelow(t, dir) {
		if m.fstype == "overlay" && !strings.HasSuffix(m.point, "/wsmount") {
			out = append(out, m.point)
		}
	}
	return out
}

// A snapshot and its forks outlive a crash of serve and a purge (which
// stops every sandbox and unmounts their workspaces): `state check` knows
// the snapshot, and the next serve mounts each fork's workspace again, with
// what the fork wrote. Bad requests get their codes and reasons.
func TestSnapshotsSurviveCrashAndPurge(t *testing.T) {
	srv := startServer(t, storeConfig)
	c := srv.Client()
	src := claimWithFile(t, c, "seed")
	snap, err := c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: src.Name, Name: "crash-seed"})
	if err != nil {
		t.Fatal(err)
	}
	if s := snap.GetSnapshot(); s.GetContents() != sandpodv1.SnapshotContents_SNAPSHOT_CONTENTS_FILES || s.GetSizeBytes() != 4 {
		t.Fatalf("snapshot: %+v", s)
	}
	forks, err := c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "crash-seed", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := forks.GetSandboxes()[0].GetName(), forks.GetSandboxes()[1].GetName()
	if err := writeFile(t, c, a, "kept.txt", []byte("fork-a")); err != nil {
		t.Fatal(err)
	}
	layered := snap.GetSnapshot().GetStorage() == "overlayfs"
	if layered && len(overlaysUnder(t, srv.StateDir())) != 2 {
		t.Errorf("overlay mounts: %v, want the two forks'", overlaysUnder(t, srv.StateDir()))
	}

	srv.Kill(t)
	code, out := sandpod(t, "state", "check", "--state-dir", srv.StateDir())
	if code != 0 || !strings.Contains(out, "snapshots: 1") {
		t.Errorf("state check (exit %d):\n%s", code, out)
	}
	if code, out := sandpod(t, "purge", "--state-dir", srv.StateDir()); code != 0 {
		t.Fatalf("purge (exit %d):\n%s", code, out)
	}
	if m := mountsBelow(t, srv.StateDir()); len(m) != 0 {
		t.Errorf("purge left mounts: %v", m)
	}
	srv.StartAgain(t)
	c = srv.Client()
	wantFile(t, c, a, "fork-a")
	wantFile(t, c, b, "seed")
	wantFile(t, c, src.Name, "seed")
	got, err := c.GetSnapshot(ctx(t), &sandpodv1.GetSnapshotRequest{Name: "crash-seed"})
	if err != nil || got.GetSnapshot().GetUid() != snap.GetSnapshot().GetUid() {
		t.Fatalf("snapshot after the crash: %v %v", got, err)
	}

	_, err = c.DeleteSnapshot(ctx(t), &sandpodv1.DeleteSnapshotRequest{Name: "crash-seed"})
	if layered {
		wantCode(t, err, codes.FailedPrecondition, "in use by sandbox/")
		if r := errinfo.Reason(err); r != errinfo.ReasonSnapshotInUse {
			t.Errorf("reason %q", r)
		}
	}
	_, err = c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "nope", Count: 1})
	wantCode(t, err, codes.NotFound, "snapshot \"nope\" not found")
	if r := errinfo.Reason(err); r != errinfo.ReasonSnapshotNotFound {
		t.Errorf("reason %q", r)
	}
	_, err = c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "crash-seed", Count: 300})
	wantCode(t, err, codes.InvalidArgument, "count")
	_, err = c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: src.Name, IncludeMemory: true})
	wantCode(t, err, codes.Unimplemented, "files only")
	for _, n := range []string{a, b} {
		if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if m := overlaysUnder(t, srv.StateDir()); len(m) != 0 {
		t.Errorf("deletes left overlay mounts: %v", m)
	}
	if _, err := c.DeleteSnapshot(ctx(t), &sandpodv1.DeleteSnapshotRequest{Name: "crash-seed"}); err != nil {
		t.Fatal(err)
	}
}
