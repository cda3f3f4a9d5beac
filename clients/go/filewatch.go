package sandpod

import (
	"context"
	"errors"
	"io"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FileEventType says what happened to a path under a watched directory.
type FileEventType string

// The event types of Files.Watch.
const (
	FileCreated FileEventType = "create"
	FileWritten FileEventType = "write"
	FileRemoved FileEventType = "remove"
	FileRenamed FileEventType = "rename"
	// FileOverflow: events were lost (the kernel's queue overflowed while
	// the client did not read); list the directory again.
	FileOverflow FileEventType = "overflow"
)

// FileEvent is one change seen by Files.Watch.
type FileEvent struct {
	Type FileEventType
	// Path is named as the files API names paths (relative to the
	// workspace when inside it); OldPath is where a renamed path was.
	Path    string
	OldPath string
	IsDir   bool
}

func fileEventTypeFromProto(t pb.FileEvent_Type) FileEventType {
	switch t {
	case pb.FileEvent_TYPE_CREATE:
		return FileCreated
	case pb.FileEvent_TYPE_WRITE:
		return FileWritten
	case pb.FileEvent_TYPE_REMOVE:
		return FileRemoved
	case pb.FileEvent_TYPE_RENAME:
		return FileRenamed
	}
	return FileOverflow
}

// FileWatcher streams the changes under a directory; see Files.Watch.
type FileWatcher struct {
	stream  pb.SandboxService_WatchFilesClient
	cancel  context.CancelFunc
	pending []*pb.FileEvent
}

// Watch watches the directory path (WithRecursive: its whole tree,
// directories made later included). It returns once the watch is in
// place, so every change made after it returns is seen. A missing
// directory is ErrFileNotFound, a file ErrInvalidArgument. Read events
// with Next; Close (or ctx ending) stops the watch. A watch is never
// retried by the client: after an error, watch again and list the
// directory to catch up.
func (f *Files) Watch(ctx context.Context, path string, opts ...FileOption) (*FileWatcher, error) {
	cfg := newFileConfig(opts)
	if err := f.s.c.check(); err != nil {
		return nil, err
	}
	if err := f.s.c.awaitServer(ctx, "watch_files"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := f.s.c.rpc.WatchFiles(ctx, &pb.WatchFilesRequest{Sandbox: f.s.name, Namespace: f.s.ns, Path: path, Recursive: cfg.recursive})
	if err != nil {
		cancel()
		return nil, wrapError("watch_files", err)
	}
	w := &FileWatcher{stream: stream, cancel: cancel}
	// The first event says the watch is in place.
	m, err := stream.Recv()
	if err == nil && (len(m.GetEvents()) == 0 || m.GetEvents()[0].GetType() != pb.FileEvent_TYPE_READY) {
		err = status.Error(codes.Internal, "the watch did not start with its ready event")
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = status.Error(codes.Internal, "the watch ended before it was ready")
		}
		err = f.s.observe(ctx, wrapError("watch_files", err)) // before cancel: it may call GetSandbox
		cancel()
		return nil, err
	}
	w.pending = m.GetEvents()[1:]
	return w, f.s.observe(ctx, nil)
}

// Next waits for the next change. It returns io.EOF when the watch ended:
// Close was called, its context ended, or the watched directory itself was
// removed (after its FileRemoved event); any other error is an *Error.
func (w *FileWatcher) Next() (FileEvent, error) {
	for len(w.pending) == 0 {
		m, err := w.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || w.stream.Context().Err() != nil {
				return FileEvent{}, io.EOF
			}
			return FileEvent{}, wrapError("watch_files", err)
		}
		w.pending = m.GetEvents()
	}
	e := w.pending[0]
	w.pending = w.pending[1:]
	if e.GetType() == pb.FileEvent_TYPE_READY {
		return w.Next()
	}
	return FileEvent{Type: fileEventTypeFromProto(e.GetType()), Path: e.GetPath(), OldPath: e.GetOldPath(), IsDir: e.GetIsDir()}, nil
}

// Close stops the watch.
func (w *FileWatcher) Close() error {
	w.cancel()
	return nil
}
