package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// snapshotLimitConfig bounds a snapshot at 16 MiB on disk.
const snapshotLimitConfig = `---
apiVersion: sandpod.dev/v1alpha1
kind: LocalEngineConfig
snapshots: {maxBytes: 16777216}
`

// sparseScript makes a file of 128 MiB apparent size holding 12 KiB of
// data (three 4 KiB blocks: at the start, the middle and the end).
const sparseScript = `import os
with open("sparse", "wb") as f:
    for off, b in ((0, b"a"), (64 << 20, b"b"), ((128 << 20) - 4096, b"c")):
        f.seek(off)
        f.write(b * 4096)
`

// sizeAndDisk prints a file's size, the bytes it takes on disk and its
// sha256.
const sizeAndDisk = `echo $(stat -c %s sparse) $(( $(stat -c %b sparse) * $(stat -c %B sparse) )) $(sha256sum < sparse)`

// A sparse file stays sparse through a snapshot, a fork and a restore, and
// the snapshot limit counts what it takes on disk, not its apparent size.
func TestSnapshotKeepsHoles(t *testing.T) {
	srv := startServer(t, testserver.PythonTemplate+snapshotLimitConfig)
	c := srv.Client()
	s := createSandbox(t, srv, "python")
	waitRunning(t, c, s)
	sh(t, c, s, "python3 -c '"+sparseScript+"'")
	orig := sh(t, c, s, sizeAndDisk).stdout
	sparse := func(where, got string) {
		t.Helper()
		f := strings.Fields(got)
		if len(f) < 3 {
			t.Fatalf("%s: %q", where, got)
		}
		size, _ := strconv.ParseInt(f[0], 10, 64)
		disk, _ := strconv.ParseInt(f[1], 10, 64)
		if size != 128<<20 || disk > 1<<20 || f[2] != strings.Fields(orig)[2] {
			t.Errorf("%s: size %d, %d bytes on disk, sha256 %s; want %d, under 1 MiB and %s (the original: %q)",
				where, size, disk, f[2], 128<<20, strings.Fields(orig)[2], orig)
		}
	}
	sparse("in the sandbox", orig)

	snap, err := c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: s, Name: "holes"})
	if err != nil {
		t.Fatalf("snapshot of a 128 MiB sparse file (12 KiB of data) under a 16 MiB limit: %v", err)
	}
	if got := snap.GetSnapshot().GetSizeBytes(); got != 128<<20 {
		t.Errorf("snapshot size_bytes %d, want the file's size %d", got, 128<<20)
	}
	stored := filepath.Join(srv.StateDir(), "snapshots", "default", "holes", "files", "sparse")
	if fi, err := os.Stat(stored); err != nil || fi.Size() != 128<<20 {
		t.Fatalf("the snapshot's copy: %v %v", fi, err)
	}
	if disk := allocated(t, stored); disk > 1<<20 {
		t.Errorf("the snapshot's copy takes %d bytes on the host, want under 1 MiB", disk)
	}

	fr, err := c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "holes", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	sparse("in a fork", sh(t, c, fr.GetSandboxes()[0].GetName(), sizeAndDisk).stdout)

	sh(t, c, s, "rm sparse")
	if _, err := c.RestoreSandbox(ctx(t), &sandpodv1.RestoreSandboxRequest{Name: s, Snapshot: "holes"}); err != nil {
		t.Fatal(err)
	}
	sparse("after a restore", sh(t, c, s, sizeAndDisk).stdout)

	// Data is still counted: 20 MiB of it is over the 16 MiB limit.
	sh(t, c, s, "head -c 20971520 /dev/urandom > dense")
	_, err = c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: s, Name: "dense"})
	wantCode(t, err, codes.ResourceExhausted, "snapshot limit")
}
