package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ensure makes and mounts a disk once, reattach mounts it again after an
// unmount with its files, release leaves nothing; a directory that holds
// files without an image (made before disk limits) is left alone.
func TestDiskEnsureReattachRelease(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	state := t.TempDir()
	d := detectDisks(state)
	if !d.enforced() {
		t.Fatalf("no disk limits on this machine: %s", d.why)
	}
	r := &record{Namespace: "default", Name: "sb"}
	r.Spec.DiskBytes, r.Spec.DiskInodes = MinDiskBytes, MinDiskBytes/diskBytesPerInode
	dir := filepath.Join(state, "sandboxes", "default", "sb")
	t0 := time.Now()
	if err := d.ensure(dir, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("make and mount: %s", time.Since(t0))
	if !isMountPoint(dir) || len(loopDevicesOf(d.image(r))) != 1 {
		t.Fatalf("mounted %v, loop devices %v", isMountPoint(dir), loopDevicesOf(d.image(r)))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "lost+found" {
		t.Errorf("a new disk holds %v, want lost+found only", ents)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.ensure(dir, r); err != nil { // mounted: nothing to do
		t.Fatal(err)
	}
	if err := detachDisk(dir); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := d.reattach(dir, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("mount again: %s", time.Since(t0))
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "kept" {
		t.Fatalf("after a mount again: %q %v", b, err)
	}
	if got := diskMountsUnder(state); len(got) != 1 || got[0] != dir {
		t.Errorf("diskMountsUnder: %v, want [%s]", got, dir)
	}
	if err := d.release(dir, r); err != nil {
		t.Fatal(err)
	}
	if isMountPoint(dir) || len(diskMountsUnder(state)) != 0 {
		t.Error("still mounted after release")
	}
	if err := awaitDetached(filepath.Join(d.dir, "default", "sb.img"), detachWait); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(d.image(r)); !os.IsNotExist(err) {
		t.Errorf("image left: %v", err)
	}

	old := &record{Namespace: "default", Name: "old"}
	old.Spec = r.Spec
	odir := filepath.Join(state, "sandboxes", "default", "old")
	if err := os.MkdirAll(filepath.Join(odir, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.ensure(odir, old); err != nil || isMountPoint(odir) {
		t.Errorf("a directory made before disk limits: mounted %v, %v", isMountPoint(odir), err)
	}
}
