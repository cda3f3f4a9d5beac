package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A volume, a snapshot of it, a volume from the snapshot: the new volume
// has the snapshot's files (and the top directory's mode), later writes
// to the source do not reach it, retries are idempotent, and ids that
// could leave the root are refused.
func TestVolumeSnapshotRestore(t *testing.T) {
	*flagRoot = t.TempDir()
	for _, d := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(*flagRoot, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d, ctx := &driver{}, context.Background()
	if _, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-a"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(d.vol("pvc-a")); fi.Mode().Perm() != 0o777 {
		t.Errorf("new volume mode %v, want 0777 (a sandbox may run as any user)", fi.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(d.vol("pvc-a"), "state.txt"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second is a retry
		s, err := d.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: "pvc-a"})
		if err != nil || !s.GetSnapshot().GetReadyToUse() || s.GetSnapshot().GetSizeBytes() != 2 {
			t.Fatalf("snapshot: %v %v", s, err)
		}
	}
	if err := os.WriteFile(filepath.Join(d.vol("pvc-a"), "state.txt"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "snapshot-1"}}}
	if _, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-b", VolumeContentSource: src}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(d.vol("pvc-b"), "state.txt"))
	if err != nil || string(got) != "v1" {
		t.Errorf("volume from the snapshot reads %q (%v), want v1", got, err)
	}
	if fi, _ := os.Stat(d.vol("pvc-b")); fi.Mode().Perm() != 0o777 {
		t.Errorf("restored volume mode %v, want the source's 0777", fi.Mode().Perm())
	}
	_, err = d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "../../etc"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("a volume id with ..: %v, want INVALID_ARGUMENT", err)
	}
	bad := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "../volumes/pvc-a"}}}
	if _, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-c", VolumeContentSource: bad}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a snapshot id with ..: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := d.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: "snapshot-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.snap("snapshot-1")); !os.IsNotExist(err) {
		t.Errorf("deleted snapshot still there: %v", err)
	}
}

// NodePublishVolume bind-mounts the volume at the target (root only).
func TestPublish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (mount)")
	}
	*flagRoot = t.TempDir()
	_ = os.MkdirAll(filepath.Join(*flagRoot, "volumes"), 0o700)
	d, ctx := &driver{}, context.Background()
	if _, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-a"}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "mnt")
	for range 2 {
		if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "pvc-a", TargetPath: target}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.vol("pvc-a"), "f")); err != nil {
		t.Errorf("a file written at the target is not in the volume: %v", err)
	}
	if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "pvc-a", TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if mounted(target) {
		t.Error("still mounted after unpublish")
	}
}
