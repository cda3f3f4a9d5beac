package agent

import (
	"path"
	"strings"

	"golang.org/x/sys/unix"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// rawEvent is one inotify event: the watch it came from, what happened,
// the rename cookie and the name in the watched directory ("" for the
// directory itself).
type rawEvent struct {
	wd     int32
	mask   uint32
	cookie uint32
	name   string
}

// watchTree turns inotify events into FileEvents. It keeps which directory
// each watch is on (renames of watched directories move them) and pairs the
// two halves of a rename. It makes no system calls: what it needs done
// (watch a new directory tree, drop the watches of one that left) it asks
// of its caller, so that the translation is tested on its own.
type watchTree struct {
	root      string
	recursive bool
	paths     map[int32]string // watch → absolute directory
	// moved holds the first half of a rename (IN_MOVED_FROM) until its
	// second (IN_MOVED_TO, same cookie): if none comes, it moved out.
	moved map[uint32]movedFrom
	// out collects events; writes maps a path to its WRITE in out, so
	// that writes not yet sent are coalesced.
	out    []*sandpodv1.FileEvent
	writes map[string]int
	// ended: the watched directory itself went away.
	ended bool
}

type movedFrom struct {
	path  string
	isDir bool
	// temp: the files API's temporary file (see tempName), renamed over
	// its target when a WriteFile ends.
	temp bool
}

// watchActions is what the caller must do for the tree.
type watchActions interface {
	// addTree watches dir (and, recursive, its subdirectories), and
	// reports what is already in it: made before its watch was in place.
	addTree(dir string)
	// dropTree removes the watches on dir and below.
	dropTree(dir string)
}

func newWatchTree(root string, recursive bool) *watchTree {
	return &watchTree{root: root, recursive: recursive, paths: map[int32]string{}, moved: map[uint32]movedFrom{}, writes: map[string]int{}}
}

func (t *watchTree) emit(typ sandpodv1.FileEvent_Type, p, old string, isDir bool) {
	if typ == sandpodv1.FileEvent_TYPE_WRITE {
		if _, ok := t.writes[p]; ok {
			return
		}
		t.writes[p] = len(t.out)
	} else {
		delete(t.writes, p)
		if old != "" {
			delete(t.writes, old)
		}
	}
	t.out = append(t.out, &sandpodv1.FileEvent{Type: typ, Path: p, OldPath: old, IsDir: isDir})
}

// take returns the events collected and starts a new batch.
func (t *watchTree) take() []*sandpodv1.FileEvent {
	out := t.out
	t.out, t.writes = nil, map[string]int{}
	return out
}

// handle translates one inotify event.
func (t *watchTree) handle(ev rawEvent, do watchActions) {
	if ev.mask&unix.IN_Q_OVERFLOW != 0 {
		t.emit(sandpodv1.FileEvent_TYPE_OVERFLOW, t.root, "", true)
		return
	}
	dir, ok := t.paths[ev.wd]
	if !ok {
		return // a watch already dropped
	}
	if ev.mask&unix.IN_IGNORED != 0 {
		delete(t.paths, ev.wd)
		return
	}
	isDir := ev.mask&unix.IN_ISDIR != 0
	if ev.name == "" { // the directory itself
		if dir == t.root && ev.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 && !t.ended {
			t.ended = true
			t.emit(sandpodv1.FileEvent_TYPE_REMOVE, t.root, "", true)
		}
		return // a subdirectory's own removal is reported by its parent
	}
	p := path.Join(dir, ev.name)
	// The files API writes a file beside its target and renames it over:
	// its temporary name is not shown, the rename shows as the target
	// made and written.
	temp := !isDir && isTempName(ev.name)
	if temp && ev.mask&unix.IN_MOVED_FROM == 0 {
		return
	}
	switch {
	case ev.mask&unix.IN_CREATE != 0:
		t.emit(sandpodv1.FileEvent_TYPE_CREATE, p, "", isDir)
		if isDir && t.recursive {
			do.addTree(p)
		}
	case ev.mask&unix.IN_MODIFY != 0:
		t.emit(sandpodv1.FileEvent_TYPE_WRITE, p, "", false)
	case ev.mask&unix.IN_DELETE != 0:
		t.emit(sandpodv1.FileEvent_TYPE_REMOVE, p, "", isDir)
	case ev.mask&unix.IN_MOVED_FROM != 0:
		t.moved[ev.cookie] = movedFrom{path: p, isDir: isDir, temp: temp}
	case ev.mask&unix.IN_MOVED_TO != 0:
		from, ok := t.moved[ev.cookie]
		if !ok { // moved in from outside the watch
			t.emit(sandpodv1.FileEvent_TYPE_CREATE, p, "", isDir)
			if isDir && t.recursive {
				do.addTree(p)
			}
			return
		}
		delete(t.moved, ev.cookie)
		if from.temp {
			t.emit(sandpodv1.FileEvent_TYPE_CREATE, p, "", false)
			t.emit(sandpodv1.FileEvent_TYPE_WRITE, p, "", false)
			return
		}
		t.emit(sandpodv1.FileEvent_TYPE_RENAME, p, from.path, isDir)
		if isDir {
			t.renameDir(from.path, p)
		}
	}
}

// pending reports a rename waiting for its second half.
func (t *watchTree) pending() bool { return len(t.moved) > 0 }

// flushMoves reports the renames whose second half never came: they moved
// out of the watch.
func (t *watchTree) flushMoves(do watchActions) {
	for c, m := range t.moved {
		delete(t.moved, c)
		if m.temp {
			continue
		}
		t.emit(sandpodv1.FileEvent_TYPE_REMOVE, m.path, "", m.isDir)
		if m.isDir {
			do.dropTree(m.path)
		}
	}
}

// renameDir moves the watches of a directory renamed within the watch.
func (t *watchTree) renameDir(old, now string) {
	for wd, p := range t.paths {
		if p == old {
			t.paths[wd] = now
		} else if rest, ok := strings.CutPrefix(p, old+"/"); ok {
			t.paths[wd] = now + "/" + rest
		}
	}
}

// under lists the watches on dir and below.
func (t *watchTree) under(dir string) []int32 {
	var wds []int32
	for wd, p := range t.paths {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			wds = append(wds, wd)
		}
	}
	return wds
}
