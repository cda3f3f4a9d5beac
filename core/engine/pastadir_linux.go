package engine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// pastaDirPrefix names the directory attachNetwork makes in the host's
// temporary directory for pasta's PID file, and removes once pasta is up.
// A serve killed in between leaves it (with the PID file): ~10 an hour on
// this machine, whose tests stop servers mid-start (178 in /tmp at once).
const pastaDirPrefix = "sandpod-pasta-"

// pastaDirMaxAge is how old such a directory must be to be left over:
// attachNetwork gives up on pasta after 10 s and removes its directory.
const pastaDirMaxAge = time.Minute

// stalePastaDir says whether an entry of the temporary directory is a
// directory attachNetwork left: its name, a real directory (not a link),
// owned by a sandbox's root (a host id at or above firstIDBase, which no
// user of the host can give a file) and older than pastaDirMaxAge.
// Engines share the temporary directory; none uses its directory longer.
func stalePastaDir(name string, isDir bool, uid uint32, age time.Duration) bool {
	return strings.HasPrefix(name, pastaDirPrefix) && isDir && uid >= firstIDBase && age > pastaDirMaxAge
}

// sweepPastaDirs removes the directories an earlier serve left, and says
// how many went.
func sweepPastaDirs(tmp string, now time.Time) int {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), pastaDirPrefix) {
			continue
		}
		fi, err := e.Info() // lstat: a link is no directory
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !stalePastaDir(e.Name(), fi.IsDir(), st.Uid, now.Sub(fi.ModTime())) {
			continue
		}
		// RemoveAll follows no link inside (it works with openat and
		// unlinkat relative to the directory it opened).
		if os.RemoveAll(filepath.Join(tmp, e.Name())) == nil {
			n++
		}
	}
	return n
}
