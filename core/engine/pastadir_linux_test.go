package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStalePastaDir(t *testing.T) {
	old, young := 2*pastaDirMaxAge, pastaDirMaxAge/2
	for name, tc := range map[string]struct {
		name  string
		dir   bool
		uid   uint32
		age   time.Duration
		stale bool
	}{
		"left over":               {name: "sandpod-pasta-123", dir: true, uid: firstIDBase, age: old, stale: true},
		"in use (young)":          {name: "sandpod-pasta-123", dir: true, uid: firstIDBase, age: young},
		"a link or file":          {name: "sandpod-pasta-123", dir: false, uid: firstIDBase, age: old},
		"a user's (uid below)":    {name: "sandpod-pasta-123", dir: true, uid: 1000, age: old},
		"root's (not chowned)":    {name: "sandpod-pasta-123", dir: true, uid: 0, age: old},
		"another name":            {name: "sandpod-other-123", dir: true, uid: firstIDBase, age: old},
		"a high id of the ranges": {name: "sandpod-pasta-x", dir: true, uid: 1<<31 - 1, age: old, stale: true},
	} {
		if got := stalePastaDir(tc.name, tc.dir, tc.uid, tc.age); got != tc.stale {
			t.Errorf("%s: stale = %v, want %v", name, got, tc.stale)
		}
	}
}

// The sweep removes a left-over directory with its PID file, and nothing
// young, root's, or reached through a link.
func TestSweepPastaDirs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory a sandbox's id")
	}
	tmp := t.TempDir()
	mk := func(name string, uid int) string {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "pid"), []byte("42"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		return d
	}
	left := mk(pastaDirPrefix+"left", firstIDBase)
	young := mk(pastaDirPrefix+"young", firstIDBase)
	roots := mk(pastaDirPrefix+"root", 0)
	target := mk("target", firstIDBase)
	if err := os.Symlink(target, filepath.Join(tmp, pastaDirPrefix+"link")); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * pastaDirMaxAge)
	for _, d := range []string{left, roots, target} {
		if err := os.Chtimes(d, past, past); err != nil {
			t.Fatal(err)
		}
	}
	if n := sweepPastaDirs(tmp, time.Now()); n != 1 {
		t.Errorf("removed %d, want 1", n)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the left-over directory is still there: %v", err)
	}
	for _, d := range []string{young, roots, filepath.Join(target, "pid")} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s went: %v", d, err)
		}
	}
}
