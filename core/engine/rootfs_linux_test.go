package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sandbox's root may hold links its root planted to host paths: the
// engine, refreshing /etc as host root, must never write through them.
func TestPrepareRootFSNeverFollowsPlantedLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the engine runs as root; chown needs it")
	}
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	outside := filepath.Join(dir, "host-etc")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareRootFS(rootfs, firstIDBase, "sb", 1000, 1000, false, nil); err != nil {
		t.Fatal(err)
	}
	// The sandbox's root replaces /etc/passwd with a link to a host file,
	// then /etc itself with a link to a host directory.
	hostFile := filepath.Join(dir, "host-passwd")
	if err := os.WriteFile(hostFile, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(rootfs, "etc", "passwd"))
	if err := os.Symlink(hostFile, filepath.Join(rootfs, "etc", "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareRootFS(rootfs, firstIDBase, "sb", 1000, 1000, false, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(hostFile); string(b) != "host\n" {
		t.Fatalf("the engine wrote through a planted link: host file now %q", b)
	}
	os.RemoveAll(filepath.Join(rootfs, "etc"))
	if err := os.Symlink(outside, filepath.Join(rootfs, "etc")); err != nil {
		t.Fatal(err)
	}
	mounts, err := prepareRootFS(rootfs, firstIDBase, "sb", 1000, 1000, false, []hostMount{{Source: "/opt/x", Destination: "/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("the engine wrote %d files into the host directory a planted /etc link named", len(entries))
	}
	fi, err := os.Lstat(filepath.Join(rootfs, "etc"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("/etc is not a directory again: %v %v", fi, err)
	}
	b, _ := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if !strings.Contains(string(b), "user:x:1000:1000:") {
		t.Fatalf("passwd: %q", b)
	}
	if last := mounts[len(mounts)-1]; last.Destination != "/x" {
		t.Fatalf("the template's host trees come last: %v", mounts)
	}
	for _, m := range mounts {
		if m.Source == "/etc/shadow" || m.Source == "/etc/passwd" || m.Source == "/etc/sudoers" {
			t.Fatalf("host %s is mounted into the sandbox", m.Source)
		}
	}
}
