package e2b

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// maxWatcherEvents and maxWatcherBytes (encoded) bound the events
// a polled watcher (CreateWatcher) keeps in serve's memory between two
// GetWatcherEvents; past either the oldest are dropped. The sandbox's code
// makes them: names run to 4 KiB each.
const (
	maxWatcherEvents = 10_000
	maxWatcherBytes  = 1 << 20
)

// fsEvents maps a batch of sandpod file events under root (a sandbox
// path) to envd's: the name is relative to the watched directory, a
// rename is a RENAME of the old name and a CREATE of the new one (as
// inotify reports it through envd), an overflow has no envd event.
func fsEvents(root string, evs []*sandpodv1.FileEvent) []*filesystem.FilesystemEvent {
	rel := func(p string) string {
		if !strings.HasPrefix(p, "/") {
			p = sandpodHome + "/" + p
		}
		p = path.Clean(p)
		if r, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/"); ok {
			return r
		}
		return p
	}
	var out []*filesystem.FilesystemEvent
	add := func(p string, t filesystem.EventType) {
		out = append(out, &filesystem.FilesystemEvent{Name: rel(p), Type: t})
	}
	for _, ev := range evs {
		switch ev.GetType() {
		case sandpodv1.FileEvent_TYPE_CREATE:
			add(ev.GetPath(), filesystem.EventType_EVENT_TYPE_CREATE)
		case sandpodv1.FileEvent_TYPE_WRITE:
			add(ev.GetPath(), filesystem.EventType_EVENT_TYPE_WRITE)
		case sandpodv1.FileEvent_TYPE_REMOVE:
			add(ev.GetPath(), filesystem.EventType_EVENT_TYPE_REMOVE)
		case sandpodv1.FileEvent_TYPE_RENAME:
			add(ev.GetOldPath(), filesystem.EventType_EVENT_TYPE_RENAME)
			add(ev.GetPath(), filesystem.EventType_EVENT_TYPE_CREATE)
		}
	}
	return out
}

// startWatch opens a sandpod watch of an E2B path and waits until it is in
// place (its READY event).
func (s *Server) startWatch(ctx context.Context, ns, name, p string, recursive bool) (sandpodv1.SandboxService_WatchFilesClient, string, error) {
	root := toSandpodPath(p)
	w, err := s.api.WatchFiles(ctx, &sandpodv1.WatchFilesRequest{Sandbox: name, Namespace: ns, Path: root, Recursive: recursive})
	if err != nil {
		return nil, "", connectError(err)
	}
	res, err := w.Recv()
	if err != nil {
		return nil, "", connectError(err)
	}
	if evs := res.GetEvents(); len(evs) == 0 || evs[0].GetType() != sandpodv1.FileEvent_TYPE_READY {
		return nil, "", connect.NewError(connect.CodeInternal, errors.New("the watch did not start with its ready event"))
	}
	return w, root, nil
}

// withEntries adds each event's entry (a stat after the fact) when the
// caller asked for them; a file gone since has none.
func (f filesystemService) withEntries(ctx context.Context, ns, name, root string, evs []*filesystem.FilesystemEvent) {
	for _, ev := range evs {
		if ev.GetType() == filesystem.EventType_EVENT_TYPE_REMOVE || ev.GetType() == filesystem.EventType_EVENT_TYPE_RENAME {
			continue
		}
		p := ev.GetName()
		if !strings.HasPrefix(p, "/") {
			p = path.Join(root, p)
		}
		if st, err := f.s.api.StatFile(ctx, &sandpodv1.StatFileRequest{Sandbox: name, Namespace: ns, Path: p}); err == nil {
			ev.Entry = entryOf(st.GetFile())
		}
	}
}

func (f filesystemService) WatchDir(ctx context.Context, req *connect.Request[filesystem.WatchDirRequest], out *connect.ServerStream[filesystem.WatchDirResponse]) error {
	ctx, ns, name := f.call(ctx, req.Header())
	w, root, err := f.s.startWatch(ctx, ns, name, req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return err
	}
	if err := out.Send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Start{Start: &filesystem.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	type batch struct {
		evs []*sandpodv1.FileEvent
		err error
	}
	in := make(chan batch)
	go func() {
		for {
			res, err := w.Recv()
			select {
			case in <- batch{res.GetEvents(), err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var tick <-chan time.Time
	if secs, err := strconv.Atoi(req.Header().Get("Keepalive-Ping-Interval")); err == nil && secs > 0 {
		t := time.NewTicker(time.Duration(secs) * time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case b := <-in:
			if b.err != nil {
				return connectError(b.err)
			}
			evs := fsEvents(root, b.evs)
			if req.Msg.GetIncludeEntry() {
				f.withEntries(ctx, ns, name, root, evs)
			}
			for _, ev := range evs {
				if err := out.Send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Filesystem{Filesystem: ev}}); err != nil {
					return err
				}
			}
		case <-tick:
			if err := out.Send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Keepalive{Keepalive: &filesystem.WatchDirResponse_KeepAlive{}}}); err != nil {
				return err
			}
		case <-ctx.Done():
			return connectError(ctx.Err())
		}
	}
}

// watchers are the polled watches (CreateWatcher): each holds a sandpod
// watch open and keeps its events until GetWatcherEvents takes them.
type watchers struct {
	mu   sync.Mutex
	byID map[string]*watcher
}

type watcher struct {
	sbx     string
	cancel  context.CancelFunc
	more    chan struct{} // signalled when events arrive
	mu      sync.Mutex
	events  []*filesystem.FilesystemEvent
	bytes   int // the encoded size of events
	err     error
	dropped int
}

// keep adds evs, dropping the oldest past the bounds; w.mu is held.
func (w *watcher) keep(evs []*filesystem.FilesystemEvent) {
	for _, ev := range evs {
		w.bytes += proto.Size(ev)
	}
	w.events = append(w.events, evs...)
	n := 0
	for len(w.events)-n > maxWatcherEvents || (w.bytes > maxWatcherBytes && n < len(w.events)) {
		w.bytes -= proto.Size(w.events[n])
		n++
	}
	if n > 0 {
		// A new slice: the dropped events' memory goes with the old one.
		w.events, w.dropped = append([]*filesystem.FilesystemEvent(nil), w.events[n:]...), w.dropped+n
	}
}

func newWatchers() *watchers { return &watchers{byID: map[string]*watcher{}} }

// watcher is the watcher id names, after checking that the caller may use
// the sandbox: its events are the sandbox's file names.
func (f filesystemService) watcher(ctx context.Context, h http.Header, id string) (*watcher, error) {
	_, name, key := f.s.sandbox(h)
	if _, err := f.s.lookup(withToken(ctx, h), name); err != nil {
		return nil, connectError(err)
	}
	return f.s.watch.get(key, id)
}

// forget ends and drops the watchers of a deleted sandbox.
func (ws *watchers) forget(sbx string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for id, w := range ws.byID {
		if w.sbx == sbx {
			w.cancel()
			delete(ws.byID, id)
		}
	}
}

func (ws *watchers) get(sbx, id string) (*watcher, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.byID[id]
	if w == nil || w.sbx != sbx {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("%w: %q", errNoWatcher, id))
	}
	return w, nil
}

func (f filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[filesystem.CreateWatcherRequest]) (*connect.Response[filesystem.CreateWatcherResponse], error) {
	ns, name, key := f.s.sandbox(req.Header())
	// The watch outlives this call, with the caller's token.
	wctx, cancel := context.WithCancel(context.WithoutCancel(withToken(ctx, req.Header())))
	stream, root, err := f.s.startWatch(wctx, ns, name, req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		cancel()
		return nil, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	w := &watcher{sbx: key, cancel: cancel, more: make(chan struct{}, 1)}
	f.s.watch.mu.Lock()
	f.s.watch.byID[id] = w
	f.s.watch.mu.Unlock()
	go func() {
		for {
			res, err := stream.Recv()
			evs := fsEvents(root, res.GetEvents())
			if req.Msg.GetIncludeEntry() && err == nil {
				f.withEntries(wctx, ns, name, root, evs)
			}
			w.mu.Lock()
			w.keep(evs)
			if err != nil && wctx.Err() == nil {
				w.err = connectError(err)
			}
			w.mu.Unlock()
			select {
			case w.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return connect.NewResponse(&filesystem.CreateWatcherResponse{WatcherId: id}), nil
}

func (f filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[filesystem.GetWatcherEventsRequest]) (*connect.Response[filesystem.GetWatcherEventsResponse], error) {
	w, err := f.watcher(ctx, req.Header(), req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	w.wait(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.events) == 0 && w.err != nil {
		// Its watch has ended and everything it saw has been taken.
		f.s.watch.mu.Lock()
		delete(f.s.watch.byID, req.Msg.GetWatcherId())
		f.s.watch.mu.Unlock()
		return nil, w.err
	}
	evs := w.events
	w.events, w.bytes = nil, 0
	return connect.NewResponse(&filesystem.GetWatcherEventsResponse{Events: evs}), nil
}

// Polling waits: envd's events reach its watcher as soon as the change is
// made, sandpod's travel from the sandbox's agent first, so a poll right
// after a change waits for them a little: up to pollWait for a first
// event, then pollSettle for those that follow it.
const (
	pollWait   = 250 * time.Millisecond
	pollSettle = 50 * time.Millisecond
)

func (w *watcher) wait(ctx context.Context) {
	w.mu.Lock()
	have := len(w.events) > 0 || w.err != nil
	w.mu.Unlock()
	if !have {
		select {
		case <-w.more:
		case <-time.After(pollWait):
			return
		case <-ctx.Done():
			return
		}
	}
	settle := time.NewTimer(pollSettle)
	defer settle.Stop()
	for {
		select {
		case <-w.more:
		case <-settle.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (f filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[filesystem.RemoveWatcherRequest]) (*connect.Response[filesystem.RemoveWatcherResponse], error) {
	w, err := f.watcher(ctx, req.Header(), req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	f.s.watch.mu.Lock()
	delete(f.s.watch.byID, req.Msg.GetWatcherId())
	f.s.watch.mu.Unlock()
	w.cancel()
	return connect.NewResponse(&filesystem.RemoveWatcherResponse{}), nil
}
