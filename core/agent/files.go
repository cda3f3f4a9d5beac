package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// ReadChunk is the size of ReadFile messages.
const ReadChunk = 1 << 20

// ReadFile streams a file from offset, for length bytes (0: to the end).
func (s *Server) ReadFile(req *sandpodv1.ReadFileRequest, stream sandpodv1.AgentService_ReadFileServer) error {
	rel, err := s.path("read_file", req.GetPath())
	if err != nil {
		return err
	}
	if req.GetOffset() < 0 || req.GetLength() < 0 {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidValue, "read_file: offset and length must not be negative")
	}
	f, fi, err := s.openChecked("read_file", req.GetPath(), rel, false)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi.IsDir() {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonIsADirectory, "read_file: %q is a directory", req.GetPath())
	}
	n := readSpan(fi.Size(), req.GetOffset(), req.GetLength())
	if n == 0 {
		return nil // past the end: nothing to read (a seek there may fail)
	}
	if _, err := f.Seek(req.GetOffset(), io.SeekStart); err != nil {
		return fileError("read_file", req.GetPath(), err)
	}
	// Bounded by the size at open: a file that grows while it is read (a
	// log, or code that appends as fast as it is read) still ends.
	r := io.LimitReader(f, n)
	buf := make([]byte, ReadChunk)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if serr := stream.Send(&sandpodv1.ReadFileResponse{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return fileError("read_file", req.GetPath(), err)
		}
	}
}

// pseudoFileMax bounds the read of a regular file whose size is 0: the
// kernel's files (/proc, /sys) say 0 and still have content.
const pseudoFileMax = 16 << 20

// readSpan is how many bytes a read from offset takes of a file of size
// bytes at open: length of them (0: all), never past that size.
func readSpan(size, offset, length int64) int64 {
	if size == 0 {
		size = pseudoFileMax
	}
	if offset >= size {
		return 0
	}
	if n := size - offset; length == 0 || length > n {
		return n
	}
	return length
}

// WriteFile writes a file atomically: into a temporary file beside it, then
// renamed over the target when the stream closes cleanly. A broken stream
// leaves the old file untouched.
func (s *Server) WriteFile(stream sandpodv1.AgentService_WriteFileServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidStream, "write_file: the first message must be the header")
	}
	rel, err := s.path("write_file", h.GetPath())
	if err != nil {
		return err
	}
	if rel == s.cfg.Root || rel == "/" {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonIsADirectory, "write_file: path is a directory (the workspace or the root)")
	}
	mode := fs.FileMode(h.GetMode())
	if mode == 0 {
		mode = 0o644
	}
	if mode&^fs.ModePerm != 0 {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidValue, "write_file: mode %o has bits beyond 0777", h.GetMode())
	}
	switch fi, err := s.root.Stat(rel); {
	case err == nil && fi.IsDir():
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonIsADirectory, "write_file: %q is a directory", h.GetPath())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		// A link out of the sandbox is refused as reads are, rather than
		// silently replaced; so is a path through a file.
		return fileError("write_file", h.GetPath(), err)
	}
	dir := path.Dir(rel)
	if h.GetMakeParents() && dir != "." {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) { // a file where a directory should be
				return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonNotADirectory, "write_file: a parent of %q is not a directory", h.GetPath())
			}
			return fileError("write_file", h.GetPath(), err)
		}
	}
	tmp := path.Join(dir, tempName(path.Base(rel)))
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fileError("write_file", h.GetPath(), err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			_ = s.root.Remove(tmp)
		}
	}()
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if msg.GetHeader() != nil {
			return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidStream, "write_file: only the first message may be a header")
		}
		if _, err := f.Write(msg.GetData()); err != nil {
			return fileError("write_file", h.GetPath(), err)
		}
	}
	if err := f.Chmod(mode); err != nil { // not masked by the umask
		return fileError("write_file", h.GetPath(), err)
	}
	if err := f.Close(); err != nil {
		return fileError("write_file", h.GetPath(), err)
	}
	if err := s.root.Rename(tmp, rel); err != nil {
		return fileError("write_file", h.GetPath(), err)
	}
	committed = true
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return fileError("write_file", h.GetPath(), err)
	}
	return stream.SendAndClose(&sandpodv1.WriteFileResponse{File: s.fileInfo(rel, fi)})
}

// ListFiles lists one page of a directory, sorted by name. Each page reads
// all the names (a directory has no order of its own to resume from) but
// stats only the entries it returns.
func (s *Server) ListFiles(_ context.Context, req *sandpodv1.ListFilesRequest) (*sandpodv1.ListFilesResponse, error) {
	dir, err := s.path("list_files", req.GetPath())
	if err != nil {
		return nil, err
	}
	size, err := ListPageSize(req.GetPageSize())
	if err != nil {
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidPage, "list_files: page_size: %v", err)
	}
	// The token is bound to the directory's absolute path, the same however
	// the caller spelled it.
	after, err := DecodeListToken(dir, req.GetPageToken())
	if err != nil {
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidPage, "list_files: page_token: %v", err)
	}
	d, _, err := s.openChecked("list_files", req.GetPath(), dir, true)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fileError("list_files", req.GetPath(), err)
	}
	sort.Strings(names)
	out := &sandpodv1.ListFilesResponse{}
	bytes, last := 0, ""
	i := sort.SearchStrings(names, after)
	if i < len(names) && names[i] == after && after != "" {
		i++
	}
	for ; i < len(names) && len(out.Files) < size; i++ {
		abs := path.Join(dir, names[i])
		fi, err := s.root.Lstat(abs)
		if err != nil {
			continue // removed while listing
		}
		f := s.fileInfo(abs, fi)
		n := proto.Size(f) + 8 // the field's tag and length
		if len(out.Files) > 0 && bytes+n > listPageBytes {
			break
		}
		out.Files = append(out.Files, f)
		bytes, last = bytes+n, names[i]
	}
	if i < len(names) {
		out.NextPageToken = EncodeListToken(dir, last)
	}
	return out, nil
}

// StatFile describes one path without following a final symbolic link.
func (s *Server) StatFile(_ context.Context, req *sandpodv1.StatFileRequest) (*sandpodv1.StatFileResponse, error) {
	rel, err := s.path("stat_file", req.GetPath())
	if err != nil {
		return nil, err
	}
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return nil, fileError("stat_file", req.GetPath(), err)
	}
	return &sandpodv1.StatFileResponse{File: s.fileInfo(rel, fi)}, nil
}

// RemoveFile removes a file, an empty directory, or (recursive) a tree.
func (s *Server) RemoveFile(_ context.Context, req *sandpodv1.RemoveFileRequest) (*sandpodv1.RemoveFileResponse, error) {
	rel, err := s.path("remove_file", req.GetPath())
	if err != nil {
		return nil, err
	}
	if rel == s.cfg.Root || rel == "/" {
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidPath, "remove_file: the workspace and the root cannot be removed")
	}
	if _, err := s.root.Lstat(rel); err != nil {
		return nil, fileError("remove_file", req.GetPath(), err)
	}
	if req.GetRecursive() {
		err = s.root.RemoveAll(rel)
	} else {
		err = s.root.Remove(rel)
	}
	if err != nil {
		return nil, fileError("remove_file", req.GetPath(), err)
	}
	return &sandpodv1.RemoveFileResponse{}, nil
}

// MakeDir creates a directory (and, with parents, its missing parents).
func (s *Server) MakeDir(_ context.Context, req *sandpodv1.MakeDirRequest) (*sandpodv1.MakeDirResponse, error) {
	rel, err := s.path("make_dir", req.GetPath())
	if err != nil {
		return nil, err
	}
	mode := fs.FileMode(req.GetMode())
	if mode == 0 {
		mode = 0o755
	}
	if mode&^fs.ModePerm != 0 {
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidValue, "make_dir: mode %o has bits beyond 0777", req.GetMode())
	}
	if req.GetParents() {
		err = s.root.MkdirAll(rel, mode)
	} else {
		err = s.root.Mkdir(rel, mode)
	}
	if err != nil {
		return nil, fileError("make_dir", req.GetPath(), err)
	}
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return nil, fileError("make_dir", req.GetPath(), err)
	}
	return &sandpodv1.MakeDirResponse{File: s.fileInfo(rel, fi)}, nil
}

// path resolves a client path to an absolute path in the sandbox: the
// files API and commands see one file system, and a relative path is
// relative to the workspace, the working directory of commands.
func (s *Server) path(op, p string) (string, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return "", errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidPath, "%s: path: %v", op, err)
	}
	if path.IsAbs(clean) {
		return clean, nil
	}
	return path.Join(s.cfg.Root, clean), nil
}

// shown is how an answer names an absolute path: relative to the
// workspace when inside it (as the request most likely was), else absolute.
func (s *Server) shown(abs string) string {
	if abs == s.cfg.Root {
		return ""
	}
	if rel, ok := strings.CutPrefix(abs, s.cfg.Root+"/"); ok {
		return rel
	}
	return abs
}

// fileError maps a file system error to a gRPC status that names the path.
// A missing path carries the reason FILE_NOT_FOUND, so that clients tell it
// from a missing sandbox (SANDBOX_NOT_FOUND), which has the same code.
func fileError(op, p string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errinfo.New(codes.NotFound, errinfo.ReasonFileNotFound, map[string]string{"path": p},
			fmt.Sprintf("%s: %q does not exist in the sandbox", op, p))
	case strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes"):
		return errinfo.Newf(codes.PermissionDenied, errinfo.ReasonPathOutsideSandbox, "%s: %q leads outside the sandbox (through a symbolic link)", op, p)
	case errors.As(err, &errno) && errno == syscall.EROFS:
		return errinfo.Newf(codes.PermissionDenied, errinfo.ReasonReadOnlyFileSystem, "%s: %q is on a read-only file system (the sandbox's host trees are read-only)", op, p)
	case errors.Is(err, fs.ErrPermission):
		return errinfo.Newf(codes.PermissionDenied, errinfo.ReasonFilePermissionDenied, "%s: %q: permission denied", op, p)
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonNotADirectory, "%s: a parent of %q is not a directory", op, p)
	case errors.As(err, &errno) && errno == syscall.ENOTEMPTY:
		return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonDirectoryNotEmpty, "%s: directory %q is not empty (use recursive)", op, p)
	case errors.Is(err, fs.ErrExist): // after ENOTEMPTY, which also matches ErrExist
		return errinfo.Newf(codes.AlreadyExists, errinfo.ReasonFileExists, "%s: %q already exists", op, p)
	case errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT):
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonSandboxDiskFull, "%s: %q: no space left in the sandbox", op, p)
	case errors.As(err, &errno) && errno == syscall.EISDIR:
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonIsADirectory, "%s: %q is a directory", op, p)
	case errors.As(err, &errno) && errno == syscall.ELOOP:
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidPath, "%s: %q: too many levels of symbolic links (a link loop?)", op, p)
	case errors.As(err, &errno) && errno == syscall.ENAMETOOLONG:
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidPath, "%s: %q: a name in the path is longer than %d bytes", op, p, MaxNameLen)
	default:
		return errinfo.Newf(codes.Internal, errinfo.ReasonFileOperationFailed, "%s: %q: %v", op, p, err)
	}
}

func (s *Server) fileInfo(abs string, fi fs.FileInfo) *sandpodv1.FileInfo {
	return &sandpodv1.FileInfo{
		Path:       s.shown(abs),
		Name:       fi.Name(),
		Size:       fi.Size(),
		Mode:       uint32(fi.Mode().Perm()),
		IsDir:      fi.IsDir(),
		IsSymlink:  fi.Mode()&fs.ModeSymlink != 0,
		ModifyTime: timestamppb.New(fi.ModTime()),
	}
}

// tempName is the hidden name a file is written under before it is renamed
// over base; it fits in MaxNameLen whatever the length of base.
func tempName(base string) string {
	const suffix = len(".sandpod-") + 12
	if len(base) > MaxNameLen-1-suffix {
		base = base[:MaxNameLen-1-suffix]
	}
	return "." + base + ".sandpod-" + randomSuffix()
}

// isTempName reports whether name is one tempName made: "." + a name +
// ".sandpod-" + 12 hex digits.
func isTempName(name string) bool {
	const marker = ".sandpod-"
	if len(name) < 1+len(marker)+12 || name[0] != '.' {
		return false
	}
	hexPart := name[len(name)-12:]
	if name[len(name)-12-len(marker):len(name)-12] != marker {
		return false
	}
	for _, c := range hexPart {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
