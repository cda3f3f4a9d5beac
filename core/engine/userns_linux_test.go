package engine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The sandbox's user namespace is owned by the base of its range and maps
// the whole range; the engine's own threads keep root's ids and groups.
func TestUserNSIsOwnedByItsRange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the engine runs as root; mapping a range of host ids needs it")
	}
	const base = firstIDBase + 5*idRangeSize
	groupsBefore, _ := unix.Getgroups()
	for i := 0; i < 20; i++ { // each on a thread of its own, some perhaps the main one
		ns, err := newUserNS(base, idRangeSize)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(ns.path())
		if err != nil {
			t.Fatal(err)
		}
		owner, err := unix.IoctlGetUint32(int(f.Fd()), unix.NS_GET_OWNER_UID)
		f.Close()
		if err != nil || owner != base {
			t.Fatalf("owner of the namespace: %d (%v), want %d", owner, err, base)
		}
		m, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(ns.path())), "uid_map"))
		if got := strings.Join(strings.Fields(string(m)), " "); got != "0 "+strconv.Itoa(base)+" 65536" {
			t.Fatalf("uid_map %q", m)
		}
		ns.release()
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, st := range tasks {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // a thread that ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") && strings.Join(f[1:], " ") != "0 0 0 0" {
				t.Errorf("%s: %s, want root's ids on every thread of the engine", st, line)
			}
		}
	}
	if g, _ := unix.Getgroups(); len(g) != len(groupsBefore) {
		t.Errorf("groups %v, before %v", g, groupsBefore)
	}
}
