package engine

import (
	"os"
	"path/filepath"
)

// bundleDir holds a sandbox's runc bundle (config.json, runc's log and pid
// file), rewritten at each start. It is on the host's disk, not on the
// sandbox's own (disk_linux.go): a start needs new inodes there, and a
// sandbox that used all of its own must still start again.
func (e *Engine) bundleDir(r *record) string {
	return filepath.Join(e.cfg.StateDir, "bundles", r.UID[:16])
}

// sweepBundles removes the bundles no sandbox owns (an engine that died
// during a delete).
func (e *Engine) sweepBundles() {
	known := map[string]bool{}
	for _, sb := range e.sandboxes {
		known[filepath.Base(e.bundleDir(&sb.rec))] = true
	}
	ents, _ := os.ReadDir(filepath.Join(e.cfg.StateDir, "bundles"))
	for _, ent := range ents {
		if !known[ent.Name()] {
			_ = os.RemoveAll(filepath.Join(e.cfg.StateDir, "bundles", ent.Name()))
		}
	}
}
