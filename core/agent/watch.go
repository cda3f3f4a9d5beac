package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Watch limits. Each watched directory is a kernel inotify watch, counted
// against the sandbox user's share of the node's (max_user_watches), and
// each stream an inotify instance (max_user_instances, 128 by default):
// a sandbox must not take them all.
const (
	// MaxWatchStreams bounds the WatchFiles calls open at once in a sandbox.
	MaxWatchStreams = 16
	// MaxWatchDirs bounds the directories one watch holds.
	MaxWatchDirs = 8192
	// MaxSandboxWatchDirs bounds the directories all watches of a sandbox
	// hold together.
	MaxSandboxWatchDirs = 32768
	// watchBatchEvents and watchBatchBytes bound one WatchFilesResponse.
	watchBatchEvents = 1024
	watchBatchBytes  = 512 << 10
	// moveWait is how long the first half of a rename waits for its
	// second; the kernel queues both at once, so it is only ever waited
	// for when they straddle a read.
	moveWait  = 20 * time.Millisecond
	watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK
)

// maxSyntheticCreates bounds the CREATE events reported, per batch of
// kernel events, for what new directories already held when their
// watches were added (a tree moved in): past it one OVERFLOW stands for
// the rest, and the agent holds no more than that many events.
var maxSyntheticCreates = 10000 // a var for tests

// WatchFiles streams changes under a directory (see the proto).
func (s *Server) WatchFiles(req *sandpodv1.WatchFilesRequest, stream sandpodv1.AgentService_WatchFilesServer) error {
	root, err := s.path("watch_files", req.GetPath())
	if err != nil {
		return err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return fileError("watch_files", req.GetPath(), err)
	}
	if !fi.IsDir() {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonNotADirectory, "watch_files: %q is not a directory; watch the directory it is in", req.GetPath())
	}
	if n := s.watchStreams.Add(1); n > MaxWatchStreams {
		s.watchStreams.Add(-1)
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonWatchLimit, "watch_files: the sandbox already has %d watches open, the limit; close one first", MaxWatchStreams)
	}
	defer s.watchStreams.Add(-1)

	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonWatchLimit, "watch_files: no inotify instance left (%v)", err)
	}
	// Through the runtime's poller, so that a read waits without a thread
	// and a close (the call ending) wakes it.
	f := os.NewFile(uintptr(fd), "inotify")
	w := &watcher{s: s, f: f, fd: fd, tree: newWatchTree(root, req.GetRecursive()), req: req}
	defer w.close()
	stop := context.AfterFunc(stream.Context(), w.close)
	defer stop()

	if err := w.add(root, true); err != nil {
		return err
	}
	if req.GetRecursive() {
		if err := w.walk(root, false); err != nil {
			return err
		}
	}
	w.tree.take() // nothing can be pending yet; a walk at the start reports nothing
	ready := &sandpodv1.FileEvent{Type: sandpodv1.FileEvent_TYPE_READY, Path: s.shown(root), IsDir: true}
	if err := stream.Send(&sandpodv1.WatchFilesResponse{Events: []*sandpodv1.FileEvent{ready}}); err != nil {
		return err
	}
	return w.loop(stream)
}

type watcher struct {
	s    *Server
	f    *os.File
	fd   int
	tree *watchTree
	req  *sandpodv1.WatchFilesRequest
	// wds maps each watch to true; counted in the sandbox's total.
	wds       map[int32]bool
	err       error // a limit reached while watching: ends the stream
	closeOnce sync.Once
	synth     int // CREATE events of trees found already made, in this batch
}

func (w *watcher) close() {
	w.closeOnce.Do(func() {
		w.f.Close() // the kernel drops every watch with the instance
		w.s.watchDirs.Add(-int64(len(w.wds)))
	})
}

// add watches one directory. A limit is an error the caller reports.
func (w *watcher) add(dir string, isRoot bool) error {
	if len(w.wds) >= MaxWatchDirs {
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonWatchLimit, "watch_files: %q holds more than %d directories, the limit of one watch; watch a smaller tree or without recursive", w.req.GetPath(), MaxWatchDirs)
	}
	if w.s.watchDirs.Add(1) > MaxSandboxWatchDirs {
		w.s.watchDirs.Add(-1)
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonWatchLimit, "watch_files: the sandbox's watches hold %d directories, the limit; close a watch first", MaxSandboxWatchDirs)
	}
	mask := uint32(watchMask)
	if !isRoot {
		mask |= unix.IN_DONT_FOLLOW // a link below the root is not a directory of the tree
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, mask)
	if err != nil {
		w.s.watchDirs.Add(-1)
		if errors.Is(err, unix.ENOSPC) {
			return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonWatchLimit, "watch_files: the kernel's inotify watch limit is reached (fs.inotify.max_user_watches)")
		}
		return fileError("watch_files", w.s.shown(dir), err)
	}
	if w.wds == nil {
		w.wds = map[int32]bool{}
	}
	if w.wds[int32(wd)] { // the same directory again (a hard link cannot be one; a rename race can)
		w.s.watchDirs.Add(-1)
	}
	w.wds[int32(wd)] = true
	w.tree.paths[int32(wd)] = dir
	return nil
}

// walk watches the subdirectories of dir; report says to report what it
// finds as created (a tree that appeared while watching).
func (w *watcher) walk(dir string, report bool) error {
	return walkDirs(dir, func(p string, d fs.DirEntry) error {
		if report {
			if w.synth < maxSyntheticCreates {
				w.tree.emit(sandpodv1.FileEvent_TYPE_CREATE, p, "", d.IsDir())
			} else if w.synth == maxSyntheticCreates {
				w.tree.emit(sandpodv1.FileEvent_TYPE_OVERFLOW, w.tree.root, "", true)
			}
			w.synth++
		}
		if d.IsDir() {
			if err := w.add(p, false); err != nil {
				if status.Code(err) == codes.ResourceExhausted {
					return err
				}
				return fs.SkipDir // gone or not a directory any more
			}
		}
		return nil
	})
}

// addTree and dropTree are the watchTree's actions.
func (w *watcher) addTree(dir string) {
	if w.err != nil {
		return
	}
	if err := w.add(dir, false); err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			w.err = err
		}
		return
	}
	if err := w.walk(dir, true); err != nil {
		w.err = err
	}
}

func (w *watcher) dropTree(dir string) {
	for _, wd := range w.tree.under(dir) {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		delete(w.tree.paths, wd)
		if w.wds[wd] {
			delete(w.wds, wd)
			w.s.watchDirs.Add(-1)
		}
	}
}

func (w *watcher) loop(stream sandpodv1.AgentService_WatchFilesServer) error {
	buf := make([]byte, 64<<10)
	for {
		if w.tree.pending() {
			_ = w.f.SetReadDeadline(time.Now().Add(moveWait))
		} else {
			_ = w.f.SetReadDeadline(time.Time{})
		}
		n, err := w.f.Read(buf)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.tree.flushMoves(w)
		case err != nil:
			if stream.Context().Err() != nil {
				return status.FromContextError(stream.Context().Err()).Err()
			}
			return errinfo.Newf(codes.Internal, errinfo.ReasonWatchFailed, "watch_files: read events: %v", err)
		default:
			w.synth = 0 // the cap is per batch: what one message sequence may hold
			for _, ev := range parseInotify(buf[:n]) {
				w.tree.handle(ev, w)
				if ev.mask&unix.IN_IGNORED != 0 && w.wds[ev.wd] {
					delete(w.wds, ev.wd)
					w.s.watchDirs.Add(-1)
				}
			}
		}
		if err := w.send(stream, w.tree.take()); err != nil {
			return err
		}
		if w.err != nil {
			return w.err
		}
		if w.tree.ended {
			return nil
		}
	}
}

// send sends events in messages of bounded size, paths as the files API
// shows them. It waits for the client: meanwhile the kernel queues events,
// and past its limit reports an overflow.
func (w *watcher) send(stream sandpodv1.AgentService_WatchFilesServer, evs []*sandpodv1.FileEvent) error {
	var batch []*sandpodv1.FileEvent
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := stream.Send(&sandpodv1.WatchFilesResponse{Events: batch})
		batch, size = nil, 0
		return err
	}
	for _, ev := range evs {
		ev.Path = w.s.shown(ev.Path)
		if ev.OldPath != "" {
			ev.OldPath = w.s.shown(ev.OldPath)
		}
		n := proto.Size(ev) + 4
		if len(batch) >= watchBatchEvents || size+n > watchBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, ev)
		size += n
	}
	return flush()
}

// parseInotify splits a read of an inotify instance into its events.
func parseInotify(b []byte) []rawEvent {
	var out []rawEvent
	for len(b) >= unix.SizeofInotifyEvent {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(raw.Len)
		if end > len(b) {
			break
		}
		name := b[unix.SizeofInotifyEvent:end]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		out = append(out, rawEvent{wd: raw.Wd, mask: raw.Mask, cookie: raw.Cookie, name: string(name)})
		b = b[end:]
	}
	return out
}
