package engine

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestSweepSocketsKeepsLiveAgents: at start the engine removes dead agent
// sockets that no record owns, and nothing else: not a socket a live agent
// listens on (its record lost to an older backup), not a recorded one.
func TestSweepSocketsKeepsLiveAgents(t *testing.T) {
	dir, err := os.MkdirTemp("", "sp-sock-") // short: sun_path holds 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	known := testRecord("default", "known")
	e := &Engine{log: quietLog, sockets: dir, sandboxes: map[string]*sandbox{known.key(): {rec: *known}}}

	live, err := net.Listen("unix", filepath.Join(dir, "live000000000000.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead := func(name string) {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close()
	}
	dead("dead000000000000.sock")
	dead(known.UID[:16] + ".sock")
	_ = os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600)

	e.sweepSockets()
	for name, want := range map[string]bool{
		"live000000000000.sock":  true,
		"dead000000000000.sock":  false,
		known.UID[:16] + ".sock": true,
		"notes.txt":              true,
	} {
		_, err := os.Lstat(filepath.Join(dir, name))
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v, want %v", name, got, want)
		}
	}
	if c, err := net.Dial("unix", filepath.Join(dir, "live000000000000.sock")); err != nil {
		t.Errorf("the live agent's socket no longer answers: %v", err)
	} else {
		c.Close()
	}
}
