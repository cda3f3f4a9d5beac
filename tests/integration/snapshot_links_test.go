package integration

import (
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// allocatedUnder is the disk space the files under dir take on the host
// (a file of several names counted once).
func allocatedUnder(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	seen := map[[2]uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if ino := [2]uint64{st.Dev, st.Ino}; !seen[ino] {
			seen[ino] = true
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A file with many hard links costs its sandbox its size once; its
// snapshot must not cost the host its size once per name.
func TestSnapshotsKeepHardLinks(t *testing.T) {
	const size, names = 8 << 20, 16
	srv := startServer(t, storeConfig)
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	r := sh(t, c, sb.Name, "cd /workspace && head -c 8388608 /dev/urandom > a && sha256sum < a && for i in $(seq 2 16); do ln a l$i; done && echo ok")
	if !strings.Contains(r.stdout, "ok") {
		t.Fatalf("making the links: %+v", r)
	}
	sum := strings.Fields(r.stdout)[0]
	snap, err := c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: sb.Name, Name: "links"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(srv.StateDir(), "snapshots", "default", snap.GetSnapshot().GetName())
	if n := allocatedUnder(t, dir); n > 2*size {
		t.Errorf("the snapshot of one %d-byte file with %d names takes %d bytes on the host, want at most %d", size, names, n, 2*size)
	}
	forks, err := c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "links", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	r = sh(t, c, forks.GetSandboxes()[0].GetName(), "cd /workspace && cat l16 | sha256sum && stat -c %h a")
	if f := strings.Fields(r.stdout); len(f) < 3 || f[0] != sum || f[2] != "16" {
		t.Fatalf("the fork's file: %q (stderr %q), want sum %s and 16 links", r.stdout, r.stderr, sum)
	}
}
