package engine

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A restore sets the old workspace aside at once and removes it only after
// the old process tree is gone (it may still hold files there).
func TestSetAsideRemovesAfterOldTreeIsGone(t *testing.T) {
	e := &Engine{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	dir := t.TempDir()
	work, upper := filepath.Join(dir, "work"), filepath.Join(dir, "upper")
	for _, d := range []string{work, upper} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gone := make(chan struct{})
	if err := e.setAside(dir, gone, work, upper, filepath.Join(dir, "ovl")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{work, upper} {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Fatalf("%s still in place: %v", d, err)
		}
	}
	trash := filepath.Join(dir, "trash")
	ents, err := os.ReadDir(trash)
	if err != nil || len(ents) != 1 {
		t.Fatalf("trash: %v %v", ents, err)
	}
	time.Sleep(time.Second) // removal must wait for gone (1 s: >10x a loaded machine's scheduling delay)
	if _, err := os.Lstat(filepath.Join(trash, ents[0].Name(), "upper", "sub")); err != nil {
		t.Fatalf("removed before the old tree was gone: %v", err)
	}
	close(gone)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ents, _ := os.ReadDir(trash); len(ents) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("old workspace not removed after the old tree was gone")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Nothing to set aside (a first seed): no trash either.
	fresh := t.TempDir()
	if err := e.setAside(fresh, nil, filepath.Join(fresh, "work")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(fresh, "trash")); !os.IsNotExist(err) {
		t.Fatalf("trash made for nothing: %v", err)
	}
}
