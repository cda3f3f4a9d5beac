package engine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestMapID(t *testing.T) {
	const a, b = firstIDBase, firstIDBase + 3*idRangeSize
	for _, c := range []struct {
		id, want uint32
	}{
		{a, b},                      // root of the range
		{a + 1000, b + 1000},        // the sandbox user
		{a + 65535, b + 65535},      // last id of the range
		{a + 65536, b + 65534},      // the next range's: nobody
		{0, b + 65534},              // host root: nobody
		{a - 1, b + 65534},          // just below: nobody
		{snapshotIDBase, b + 65534}, // the snapshot range is not the source range
	} {
		if got := mapID(c.id, a, b); got != c.want {
			t.Errorf("mapID(%d) = %d, want %d", c.id, got, c.want)
		}
	}
}

func owner(t *testing.T, p string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// A hostile workspace: a link to a host secret, a link out of the tree, a
// fifo, a set-uid file. The copy keeps links as links (never reads through
// them), skips the fifo without blocking, maps every owner into the target
// range and keeps modes.
func TestCopyTreeHostileWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown into id ranges")
	}
	const from, to = firstIDBase, snapshotIDBase
	src := filepath.Join(t.TempDir(), "work")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "d/e"), 0o755))
	must(os.WriteFile(filepath.Join(src, "d/e/data"), []byte("hello"), 0o640))
	must(os.WriteFile(filepath.Join(src, "suid"), []byte("x"), 0o4755))
	must(os.Symlink("/etc/shadow", filepath.Join(src, "shadow")))
	must(os.Symlink("../../..", filepath.Join(src, "d/up")))
	must(syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600))
	for _, p := range []string{"", "d", "d/e", "d/e/data", "suid", "shadow", "d/up", "fifo"} {
		must(os.Lchown(filepath.Join(src, p), int(from+1000), int(from+1000)))
	}
	must(syscall.Chmod(filepath.Join(src, "suid"), 0o4755)) // the chown cleared it
	dst := filepath.Join(t.TempDir(), "files")
	st, err := copyTree(src, dst, from, to, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != 6 || len(st.Skipped) != 1 {
		t.Errorf("stats %+v: want 6 bytes and the fifo skipped", st)
	}
	if _, err := os.Lstat(filepath.Join(dst, "fifo")); !os.IsNotExist(err) {
		t.Errorf("fifo copied: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "shadow")); err != nil || l != "/etc/shadow" {
		t.Errorf("link to /etc/shadow: %q %v, want the link itself", l, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "d/e/data")); string(b) != "hello" {
		t.Errorf("data: %q", b)
	}
	for _, p := range []string{"", "d", "d/e/data", "shadow", "d/up", "suid"} {
		if u, g := owner(t, filepath.Join(dst, p)); u != to+1000 || g != to+1000 {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, u, g, to+1000, to+1000)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dst, "suid")); fi.Mode()&os.ModeSetuid == 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("suid mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(dst, "d/e/data")); fi.Mode().Perm() != 0o640 {
		t.Errorf("data mode %v", fi.Mode())
	}
	// A byte quota stops the copy.
	if _, err := copyTree(src, filepath.Join(t.TempDir(), "q"), from, to, 3); err == nil {
		t.Error("copy over the byte limit succeeded")
	}
}

// A fork's overlay: the snapshot's files appear owned by the fork's range,
// the snapshot itself stays owned by the snapshot range, and a write in the
// fork does not reach the snapshot.
func TestOverlayForkShiftsOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	dir := t.TempDir()
	if err := probeOverlay(dir); err != nil {
		t.Skipf("no overlayfs with metacopy here: %v", err)
	}
	lower := filepath.Join(dir, "lower")
	if err := os.MkdirAll(filepath.Join(lower, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lower, "d/f"), []byte("snap"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "d", "d/f"} {
		_ = os.Lchown(filepath.Join(lower, p), int(snapshotIDBase+1000), int(snapshotIDBase+1000))
	}
	merged := filepath.Join(dir, "work")
	if err := mountOverlay(merged, lower, filepath.Join(dir, "upper"), filepath.Join(dir, "ovl")); err != nil {
		t.Fatal(err)
	}
	defer unmount(merged)
	const base = firstIDBase + 7*idRangeSize
	if err := shiftTree(merged, snapshotIDBase, base); err != nil {
		t.Fatal(err)
	}
	if u, _ := owner(t, filepath.Join(merged, "d/f")); u != base+1000 {
		t.Errorf("fork sees owner %d, want %d", u, base+1000)
	}
	if u, _ := owner(t, filepath.Join(lower, "d/f")); u != snapshotIDBase+1000 {
		t.Errorf("snapshot owner changed to %d", u)
	}
	if err := os.WriteFile(filepath.Join(merged, "d/f"), []byte("fork"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(lower, "d/f")); string(b) != "snap" {
		t.Errorf("snapshot changed by a write in the fork: %q", b)
	}
	if !isOverlayMount(merged) {
		t.Error("isOverlayMount: false on an overlay")
	}
	found := false
	for _, mp := range mountsUnder(dir) {
		found = found || mp == merged
	}
	if !found {
		t.Errorf("mountsUnder(%s) = %v, want %s", dir, mountsUnder(dir), merged)
	}
}

// `sandpod state check` tells snapshot directories without a record and
// records without files apart; a snapshot being made or removed (a dot
// directory) is neither.
func TestSnapshotDirProblems(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"default/kept/files", "default/stray/files", "default/.tmp-123/files", "rl/other/files"} {
		if err := os.MkdirAll(filepath.Join(dir, "snapshots", p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	orphans, missing := snapshotDirProblems(dir, []string{"default/kept", "rl/other", "default/gone"})
	if len(orphans) != 1 || orphans[0] != "default/stray" {
		t.Errorf("orphans %v, want [default/stray]", orphans)
	}
	if len(missing) != 1 || missing[0] != "default/gone" {
		t.Errorf("missing %v, want [default/gone]", missing)
	}
}

// With idmapped layers the fork sees the snapshot's files in its own range
// and nothing is chowned: the fork's layer stays empty until a write.
func TestOverlayIdmappedLower(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	dir := t.TempDir()
	lower := filepath.Join(dir, "lower")
	if err := os.MkdirAll(filepath.Join(lower, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lower, "d/f"), []byte("snap"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "d", "d/f"} {
		_ = os.Lchown(filepath.Join(lower, p), int(snapshotIDBase+1000), int(snapshotIDBase+1000))
	}
	const base = firstIDBase + 9*idRangeSize
	sbDir := filepath.Join(dir, "sb")
	merged, upper := filepath.Join(sbDir, "work"), filepath.Join(sbDir, "upper")
	idmapped, err := mountLayered(merged, lower, upper, filepath.Join(sbDir, "ovl"), base)
	if err != nil {
		t.Fatal(err)
	}
	defer unmount(merged)
	if !idmapped {
		t.Skip("no idmapped layers here: the ownership pass was used")
	}
	for _, p := range []string{"", "d", "d/f"} {
		if u, g := owner(t, filepath.Join(merged, p)); u != base+1000 || g != base+1000 {
			t.Errorf("fork sees /%s owned by %d:%d, want %d", p, u, g, base+1000)
		}
	}
	if ents, _ := os.ReadDir(upper); len(ents) != 0 {
		t.Errorf("the fork's layer holds %d entries before any write", len(ents))
	}
	if err := os.WriteFile(filepath.Join(merged, "d/f"), []byte("fork"), 0o644); err != nil {
		t.Fatal(err)
	}
	if u, _ := owner(t, filepath.Join(upper, "d/f")); u != base+1000 {
		t.Errorf("copied-up file owned by %d, want %d", u, base+1000)
	}
	if b, _ := os.ReadFile(filepath.Join(lower, "d/f")); string(b) != "snap" {
		t.Errorf("snapshot changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(sbDir, "lower")); !os.IsNotExist(err) {
		t.Errorf("the idmapped view was left: %v", err)
	}
}

// A file's hard links stay links to one copy: its bytes are copied and
// counted once, whatever the number of its names.
func TestCopyTreeKeepsHardLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown into id ranges")
	}
	src := filepath.Join(t.TempDir(), "work")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "d/e"), 0o755))
	data := strings.Repeat("x", 4096) // one block on disk
	must(os.WriteFile(filepath.Join(src, "a"), []byte(data), 0o644))
	for _, n := range []string{"b", "d/c", "d/e/f"} {
		must(os.Link(filepath.Join(src, "a"), filepath.Join(src, n)))
	}
	dst := filepath.Join(t.TempDir(), "files")
	st, err := copyTree(src, dst, firstIDBase, snapshotIDBase, 6000)
	if err != nil {
		t.Fatalf("copy of one 4 KiB file with 4 names under a 6000-byte limit: %v", err)
	}
	if st.Bytes != 4096 {
		t.Errorf("bytes %d, want 4096", st.Bytes)
	}
	first, err := os.Stat(filepath.Join(dst, "a"))
	must(err)
	for _, n := range []string{"b", "d/c", "d/e/f"} {
		fi, err := os.Stat(filepath.Join(dst, n))
		must(err)
		if !os.SameFile(first, fi) {
			t.Errorf("%s is not a link to a's copy", n)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "d/e/f")); string(b) != data {
		t.Errorf("d/e/f: %q", b)
	}
}
