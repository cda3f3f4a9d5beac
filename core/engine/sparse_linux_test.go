package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A sparse file copies as a sparse file: same bytes, about its data on
// disk, and the quota counts what it takes, not its apparent size.
func TestCopyTreeKeepsHoles(t *testing.T) {
	src := t.TempDir()
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 128 << 20
	chunk := bytes.Repeat([]byte("sandpod!"), 512) // 4 KiB
	for _, off := range []int64{0, 64 << 20, size - 4096} {
		if _, err := f.WriteAt(chunk, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	dst := filepath.Join(t.TempDir(), "copy")
	st, err := copyTree(src, dst, 0, 0, 1<<20)
	if err != nil {
		t.Fatalf("copy of a 128 MiB sparse file under a 1 MiB quota: %v", err)
	}
	if st.Alloc > 1<<20 || st.Bytes != size {
		t.Errorf("counted %d bytes on disk (want about 12 KiB) and %d of data (want %d)", st.Alloc, st.Bytes, size)
	}
	got, err := os.ReadFile(filepath.Join(dst, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(src, "sparse"))
	if !bytes.Equal(got, want) {
		t.Fatalf("the copy's bytes differ (len %d, want %d)", len(got), len(want))
	}
	fi, _ := os.Stat(filepath.Join(dst, "sparse"))
	if blocks := fi.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 1<<20 {
		t.Errorf("the copy takes %d bytes on disk, want about 12 KiB", blocks)
	}

	// Real data over the quota is still refused.
	if err := os.WriteFile(filepath.Join(src, "dense"), bytes.Repeat([]byte{1}, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := copyTree(src, filepath.Join(t.TempDir(), "c"), 0, 0, 1<<20); !errors.Is(err, errCopyLimit) {
		t.Fatalf("2 MiB of data under a 1 MiB quota: %v, want errCopyLimit", err)
	}
}
