package sandpod

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// writeChunk is the most file bytes sent in one message.
const writeChunk = 512 << 10

// Files is the file API of one sandbox. Paths are relative to the
// sandbox's root (a leading "/" means that root); a path that leaves the
// root is refused with ErrInvalidArgument or ErrPermissionDenied.
type Files struct{ s *Sandbox }

// Files returns the sandbox's file API.
func (s *Sandbox) Files() *Files { return &Files{s: s} }

// FileInfo describes a file in a sandbox.
type FileInfo struct {
	// Path is relative to the sandbox's root, with forward slashes.
	Path string
	Name string
	Size int64
	// Mode holds the permission bits and fs.ModeDir or fs.ModeSymlink.
	Mode      fs.FileMode
	IsDir     bool
	IsSymlink bool
	ModTime   time.Time
}

func fileInfoFromProto(f *pb.FileInfo) FileInfo {
	mode := fs.FileMode(f.GetMode()) & fs.ModePerm
	if f.GetIsDir() {
		mode |= fs.ModeDir
	}
	if f.GetIsSymlink() {
		mode |= fs.ModeSymlink
	}
	return FileInfo{
		Path:      f.GetPath(),
		Name:      f.GetName(),
		Size:      f.GetSize(),
		Mode:      mode,
		IsDir:     f.GetIsDir(),
		IsSymlink: f.GetIsSymlink(),
		ModTime:   timeFromProto(f.GetModifyTime()),
	}
}

// FileOption configures the file calls; each call uses the options that
// apply to it.
type FileOption func(*fileConfig)

type fileConfig struct {
	mode      fs.FileMode
	parents   bool
	recursive bool
	offset    int64
	length    int64
	maxSize   int64
}

func newFileConfig(opts []FileOption) *fileConfig {
	cfg := &fileConfig{}
	for _, o := range opts {
		o(cfg)
	}
	return cfg
}

// WithMode sets the permission bits of a written file (default 0644) or a
// made directory (default 0755).
func WithMode(m fs.FileMode) FileOption {
	return func(c *fileConfig) { c.mode = m & fs.ModePerm }
}

// WithParents creates missing parent directories (Write, WriteFile,
// Create, MkDir; MkDir then also accepts an existing directory).
func WithParents() FileOption {
	return func(c *fileConfig) { c.parents = true }
}

// WithRecursive lets Remove delete a directory and everything in it, and
// makes Watch watch a whole tree.
func WithRecursive() FileOption {
	return func(c *fileConfig) { c.recursive = true }
}

// WithRange reads length bytes from offset (Read, ReadFile); a length of
// 0 means to the end.
func WithRange(offset, length int64) FileOption {
	return func(c *fileConfig) { c.offset, c.length = offset, length }
}

// DefaultReadMax bounds what ReadFile holds in memory unless WithMaxSize
// says otherwise: the sandbox's code decides how large a file is.
const DefaultReadMax = 256 << 20

// WithMaxSize bounds ReadFile: a file (or range) of more than n bytes is
// ErrResourceExhausted, having fetched at most one byte more. 0 keeps
// DefaultReadMax; a negative n reads without a bound. Read streams any size.
func WithMaxSize(n int64) FileOption {
	return func(c *fileConfig) { c.maxSize = n }
}

// Read opens a file for streaming. The stream is read in chunks of at most
// 1 MiB as the caller reads; a connection that breaks is reopened at the
// offset reached (per the RetryPolicy). Close the reader to end the call
// early. Errors such as ErrFileNotFound are returned here, not on the
// first Read.
func (f *Files) Read(ctx context.Context, path string, opts ...FileOption) (io.ReadCloser, error) {
	cfg := newFileConfig(opts)
	ctx, cancel := context.WithCancel(ctx)
	r := &fileReader{f: f, ctx: ctx, cancel: cancel, path: path, offset: cfg.offset, remaining: -1}
	if cfg.length > 0 {
		r.remaining = cfg.length
	}
	if err := f.s.observe(ctx, r.open()); err != nil {
		cancel()
		return nil, err
	}
	return r, nil
}

// ReadFile reads a whole file (or WithRange's range) into memory, at most
// WithMaxSize bytes of it (DefaultReadMax).
func (f *Files) ReadFile(ctx context.Context, path string, opts ...FileOption) ([]byte, error) {
	cfg := newFileConfig(opts)
	limit := cfg.maxSize
	if limit == 0 {
		limit = DefaultReadMax
	}
	if limit > 0 && (cfg.length == 0 || cfg.length > limit) {
		// One byte more than the bound tells a file over it.
		opts = append(opts[:len(opts):len(opts)], WithRange(cfg.offset, limit+1))
	}
	r, err := f.Read(ctx, path, opts...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var src io.Reader = r
	if limit > 0 {
		src = io.LimitReader(r, limit+1)
	}
	b, err := io.ReadAll(src)
	if err == nil && limit > 0 && int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s has more than %d bytes (WithMaxSize); stream it with Read", ErrResourceExhausted, path, limit)
	}
	return b, err
}

type fileReader struct {
	f         *Files
	ctx       context.Context
	cancel    context.CancelFunc
	path      string
	offset    int64 // of the next byte to read
	remaining int64 // -1: to the end
	stream    pb.SandboxService_ReadFileClient
	buf       []byte
	err       error
}

// open (re)opens the stream at r.offset and receives the first chunk, with
// retries.
func (r *fileReader) open() error {
	s := r.f.s
	return s.c.retryStream(r.ctx, "files.read", func(ctx context.Context, _ int) error {
		req := &pb.ReadFileRequest{Sandbox: s.name, Namespace: s.ns, Path: r.path, Offset: r.offset}
		if r.remaining > 0 {
			req.Length = r.remaining
		}
		stream, err := s.c.rpc.ReadFile(ctx, req)
		if err != nil {
			return err
		}
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			r.err = io.EOF
			return nil
		}
		if err != nil {
			return err
		}
		r.stream = stream
		r.take(m.GetData())
		return nil
	})
}

func (r *fileReader) take(b []byte) {
	r.buf = b
	r.offset += int64(len(b))
	if r.remaining > 0 {
		r.remaining -= int64(len(b))
	}
}

func (r *fileReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.remaining == 0 {
			r.err = io.EOF
			return 0, r.err
		}
		m, err := r.stream.Recv()
		switch {
		case err == nil:
			r.take(m.GetData())
		case errors.Is(err, io.EOF):
			r.err = io.EOF
		case isTransient(r.ctx, "files.read", err, false):
			// The connection broke mid-file: continue where we are.
			if oerr := r.open(); oerr != nil {
				r.err = oerr
			}
		default:
			r.err = wrapError("files.read", err)
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *fileReader) Close() error {
	r.cancel()
	if r.err == nil {
		r.err = fs.ErrClosed
	}
	return nil
}

// Write writes everything r yields to the file at path, which appears
// (replacing any old one) only once all of it arrived. A failure of r or of
// the call leaves the old file untouched. Writes are never retried.
func (f *Files) Write(ctx context.Context, path string, r io.Reader, opts ...FileOption) (FileInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := f.Create(ctx, path, opts...)
	if err != nil {
		return FileInfo{}, err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Abort()
		return FileInfo{}, err
	}
	if err := w.Close(); err != nil {
		return FileInfo{}, err
	}
	return w.Info(), nil
}

// WriteFile writes data to the file at path; see Write.
func (f *Files) WriteFile(ctx context.Context, path string, data []byte, opts ...FileOption) (FileInfo, error) {
	return f.Write(ctx, path, bytes.NewReader(data), opts...)
}

// Create opens the file at path for streaming writes. The file appears
// when Close returns nil; Abort (or the end of ctx) drops it.
func (f *Files) Create(ctx context.Context, path string, opts ...FileOption) (*FileWriter, error) {
	s := f.s
	if err := s.c.check(); err != nil {
		return nil, err
	}
	if err := s.c.awaitServer(ctx, "files.write"); err != nil {
		return nil, err
	}
	cfg := newFileConfig(opts)
	callCtx := ctx
	ctx, cancel := context.WithCancel(ctx)
	stream, err := s.c.rpc.WriteFile(ctx)
	if err != nil {
		cancel()
		return nil, wrapError("files.write", err)
	}
	w := &FileWriter{stream: stream, cancel: cancel, s: s, ctx: callCtx}
	hdr := &pb.WriteFileHeader{Sandbox: s.name, Namespace: s.ns, Path: path, Mode: uint32(cfg.mode), MakeParents: cfg.parents}
	if err := w.send(&pb.WriteFileRequest{Msg: &pb.WriteFileRequest_Header{Header: hdr}}); err != nil {
		cancel()
		return nil, err
	}
	return w, nil
}

// FileWriter streams a file into a sandbox. It is not safe for concurrent
// use.
type FileWriter struct {
	s      *Sandbox
	ctx    context.Context // the call's, for the handle's state (observe)
	stream pb.SandboxService_WriteFileClient
	cancel context.CancelFunc
	info   FileInfo
	err    error
	done   bool
}

// Write sends p.
func (w *FileWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, io.ErrClosedPipe
	}
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), writeChunk)]
		if err := w.send(&pb.WriteFileRequest{Msg: &pb.WriteFileRequest_Data{Data: c}}); err != nil {
			return n, err
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
}

func (w *FileWriter) send(m *pb.WriteFileRequest) error {
	if w.err != nil {
		return w.err
	}
	if err := w.stream.Send(m); err != nil {
		if errors.Is(err, io.EOF) {
			// The server ended the call: its status says why.
			_, err = w.stream.CloseAndRecv()
			if err == nil {
				err = status.Error(codes.Internal, "the server ended the write early")
			}
		}
		w.err = wrapError("files.write", err)
		w.done = true
		w.cancel()
	}
	return w.err
}

// Close finishes the write; the file exists once Close returns nil.
func (w *FileWriter) Close() error {
	if w.done {
		return w.err
	}
	w.done = true
	defer w.cancel()
	resp, err := w.stream.CloseAndRecv()
	if err != nil {
		w.err = w.s.observe(w.ctx, wrapError("files.write", err))
		return w.err
	}
	w.info = fileInfoFromProto(resp.GetFile())
	return w.s.observe(w.ctx, nil)
}

// Abort drops the write: the file is not changed.
func (w *FileWriter) Abort() {
	if !w.done {
		w.done = true
		w.err = wrapError("files.write", status.Error(codes.Canceled, "write aborted"))
	}
	w.cancel()
}

// Info returns the written file's description after a successful Close.
func (w *FileWriter) Info() FileInfo { return w.info }

// Stat describes one file.
func (f *Files) Stat(ctx context.Context, path string) (FileInfo, error) {
	s := f.s
	var resp *pb.StatFileResponse
	err := s.c.retry(ctx, "files.stat", func(ctx context.Context, _ int) (err error) {
		resp, err = s.c.rpc.StatFile(ctx, &pb.StatFileRequest{Sandbox: s.name, Namespace: s.ns, Path: path})
		return err
	})
	if err := s.observe(ctx, err); err != nil {
		return FileInfo{}, err
	}
	return fileInfoFromProto(resp.GetFile()), nil
}

// Exists reports whether path exists. A sandbox that does not exist is an
// error (ErrSandboxNotFound), not false.
func (f *Files) Exists(ctx context.Context, path string) (bool, error) {
	_, err := f.Stat(ctx, path)
	if errors.Is(err, ErrFileNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Remove deletes a file, or with WithRecursive a directory and its
// contents.
func (f *Files) Remove(ctx context.Context, path string, opts ...FileOption) error {
	s := f.s
	cfg := newFileConfig(opts)
	return s.observe(ctx, s.c.retry(ctx, "files.remove", func(ctx context.Context, attempt int) error {
		_, err := s.c.rpc.RemoveFile(ctx, &pb.RemoveFileRequest{Sandbox: s.name, Namespace: s.ns, Path: path, Recursive: cfg.recursive})
		if attempt > 1 && status.Code(err) == codes.NotFound {
			return nil // an earlier attempt removed it
		}
		return err
	}))
}

// MkDir makes a directory (and its parents with WithParents).
func (f *Files) MkDir(ctx context.Context, path string, opts ...FileOption) (FileInfo, error) {
	s := f.s
	cfg := newFileConfig(opts)
	var resp *pb.MakeDirResponse
	made := false // an earlier attempt made it and its answer was lost
	err := s.c.retry(ctx, "files.mkdir", func(ctx context.Context, attempt int) (err error) {
		resp, err = s.c.rpc.MakeDir(ctx, &pb.MakeDirRequest{Sandbox: s.name, Namespace: s.ns, Path: path, Parents: cfg.parents, Mode: uint32(cfg.mode)})
		if attempt > 1 && status.Code(err) == codes.AlreadyExists {
			made = true
			return nil
		}
		return err
	})
	if err := s.observe(ctx, err); err != nil {
		return FileInfo{}, err
	}
	if made {
		return f.Stat(ctx, path)
	}
	return fileInfoFromProto(resp.GetFile()), nil
}
