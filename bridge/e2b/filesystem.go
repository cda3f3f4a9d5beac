package e2b

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem"
	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem/filesystemconnect"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// maxListEntries bounds one ListDir answer, whatever its depth.
const maxListEntries = 100_000

// filesystemService is envd's filesystem.Filesystem over sandpod's files
// calls.
type filesystemService struct{ s *Server }

var _ filesystemconnect.FilesystemHandler = filesystemService{}

// entryOf is a sandpod file as envd's EntryInfo.
func entryOf(f *sandpodv1.FileInfo) *filesystem.EntryInfo {
	e := &filesystem.EntryInfo{
		Name:         f.GetName(),
		Type:         filesystem.FileType_FILE_TYPE_FILE,
		Path:         toE2BPath(f.GetPath()),
		Size:         f.GetSize(),
		Mode:         f.GetMode() & uint32(fs.ModePerm),
		ModifiedTime: f.GetModifyTime(),
		IsSymlink:    f.GetIsSymlink(),
		Metadata:     map[string]string{},
		// A sandbox runs as one user, which E2B's SDK knows as "user".
		Owner: "user",
		Group: "user",
	}
	mode := fs.FileMode(f.GetMode()) & fs.ModePerm
	switch {
	case f.GetIsDir():
		e.Type = filesystem.FileType_FILE_TYPE_DIRECTORY
		mode |= fs.ModeDir
	case f.GetIsSymlink():
		e.Type = filesystem.FileType_FILE_TYPE_SYMLINK
		mode |= fs.ModeSymlink
	}
	e.Permissions = mode.String()
	if e.Name == "" {
		e.Name = path.Base(e.Path)
	}
	return e
}

// ctx is the call's context with the caller's token, and the sandbox.
func (f filesystemService) call(ctx context.Context, h http.Header) (context.Context, string, string) {
	ns, name, _ := f.s.sandbox(h)
	return withToken(ctx, h), ns, name
}

func (f filesystemService) Stat(ctx context.Context, req *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	ctx, ns, name := f.call(ctx, req.Header())
	res, err := f.s.api.StatFile(ctx, &sandpodv1.StatFileRequest{Sandbox: name, Namespace: ns, Path: toSandpodPath(req.Msg.GetPath())})
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.StatResponse{Entry: entryOf(res.GetFile())}), nil
}

func (f filesystemService) MakeDir(ctx context.Context, req *connect.Request[filesystem.MakeDirRequest]) (*connect.Response[filesystem.MakeDirResponse], error) {
	ctx, ns, name := f.call(ctx, req.Header())
	p := toSandpodPath(req.Msg.GetPath())
	// envd answers ALREADY_EXISTS for an existing path (the SDK's make_dir
	// then returns False); sandpod's MakeDir with parents does not fail.
	if _, err := f.s.api.StatFile(ctx, &sandpodv1.StatFileRequest{Sandbox: name, Namespace: ns, Path: p}); err == nil {
		return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("path %s already exists", req.Msg.GetPath()))
	} else if status.Code(err) != codes.NotFound {
		return nil, connectError(err)
	}
	res, err := f.s.api.MakeDir(ctx, &sandpodv1.MakeDirRequest{Sandbox: name, Namespace: ns, Path: p, Parents: true})
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.MakeDirResponse{Entry: entryOf(res.GetFile())}), nil
}

// Move runs mv in the sandbox: sandpod's files API has no rename.
func (f filesystemService) Move(ctx context.Context, req *connect.Request[filesystem.MoveRequest]) (*connect.Response[filesystem.MoveResponse], error) {
	ctx, ns, name := f.call(ctx, req.Header())
	src, dst := toSandpodPath(req.Msg.GetSource()), toSandpodPath(req.Msg.GetDestination())
	if _, err := f.s.api.StatFile(ctx, &sandpodv1.StatFileRequest{Sandbox: name, Namespace: ns, Path: src}); err != nil {
		return nil, connectError(err)
	}
	out, code, err := f.s.run(ctx, ns, name, []string{"mv", "-T", "--", src, dst})
	if err != nil {
		return nil, connectError(err)
	}
	if code != 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("moving %s to %s: %s", req.Msg.GetSource(), req.Msg.GetDestination(), strings.TrimSpace(out)))
	}
	res, err := f.s.api.StatFile(ctx, &sandpodv1.StatFileRequest{Sandbox: name, Namespace: ns, Path: dst})
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.MoveResponse{Entry: entryOf(res.GetFile())}), nil
}

// run runs argv in the sandbox to its end, returning its output (stdout
// and stderr) and exit code.
func (s *Server) run(ctx context.Context, ns, name string, argv []string) (string, int32, error) {
	stream, err := s.api.Exec(ctx)
	if err != nil {
		return "", 0, err
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{Sandbox: name, Namespace: ns, Argv: argv, MaxOutputBytes: 64 << 10}}}); err != nil {
		return "", 0, err
	}
	_ = stream.CloseSend()
	var out strings.Builder
	for {
		res, err := stream.Recv()
		if err != nil {
			return "", 0, err
		}
		out.Write(res.GetStdout())
		out.Write(res.GetStderr())
		if x := res.GetExit(); x != nil {
			return out.String(), x.GetExitCode(), nil
		}
	}
}

func (f filesystemService) ListDir(ctx context.Context, req *connect.Request[filesystem.ListDirRequest]) (*connect.Response[filesystem.ListDirResponse], error) {
	ctx, ns, name := f.call(ctx, req.Header())
	depth := int(req.Msg.GetDepth())
	if depth < 1 {
		depth = 1
	}
	root := toSandpodPath(req.Msg.GetPath())
	st, err := f.s.api.StatFile(ctx, &sandpodv1.StatFileRequest{Sandbox: name, Namespace: ns, Path: root})
	if err != nil {
		return nil, connectError(err)
	}
	if !st.GetFile().GetIsDir() {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path %s is not a directory", req.Msg.GetPath()))
	}
	res := &filesystem.ListDirResponse{}
	if err := f.walk(ctx, ns, name, root, depth, res); err != nil {
		return nil, err
	}
	return connect.NewResponse(res), nil
}

// walk lists dir and, depth-1 levels down, its subdirectories, each
// directory's entries followed by its own subdirectory's, in name order
// (as envd walks).
func (f filesystemService) walk(ctx context.Context, ns, name, dir string, depth int, res *filesystem.ListDirResponse) error {
	token := ""
	for {
		page, err := f.s.api.ListFiles(ctx, &sandpodv1.ListFilesRequest{Sandbox: name, Namespace: ns, Path: dir, PageToken: token})
		if err != nil {
			return connectError(err)
		}
		for _, fi := range page.GetFiles() {
			e := entryOf(fi)
			// The listed directory's own spelling, so that entries read as E2B's.
			p := path.Join(dir, fi.GetName())
			e.Path = toE2BPath(p)
			res.Entries = append(res.Entries, e)
			if len(res.Entries) > maxListEntries {
				return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("listing %s: more than %d entries; list with a smaller depth", toE2BPath(dir), maxListEntries))
			}
			if depth > 1 && fi.GetIsDir() && !fi.GetIsSymlink() {
				if err := f.walk(ctx, ns, name, p, depth-1, res); err != nil {
					return err
				}
			}
		}
		if token = page.GetNextPageToken(); token == "" {
			return nil
		}
	}
}

// Remove removes a file or a tree; a path that is not there is no error,
// as for envd.
func (f filesystemService) Remove(ctx context.Context, req *connect.Request[filesystem.RemoveRequest]) (*connect.Response[filesystem.RemoveResponse], error) {
	ctx, ns, name := f.call(ctx, req.Header())
	_, err := f.s.api.RemoveFile(ctx, &sandpodv1.RemoveFileRequest{Sandbox: name, Namespace: ns, Path: toSandpodPath(req.Msg.GetPath()), Recursive: true})
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, connectError(err)
	}
	return connect.NewResponse(&filesystem.RemoveResponse{}), nil
}

var errNoWatcher = errors.New("watcher not found")
