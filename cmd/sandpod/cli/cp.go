package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func (a *app) cpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cp SRC DST",
		Short: "copy files and directories between this machine and a sandbox",
		Long: `Copy a file or a directory (recursively) into or out of a sandbox. One side
is NAME:PATH, the other a local path, or - for standard input or output (a
single file). A relative PATH is relative to /workspace.

As with cp -r: when DST is an existing directory (or ends with /), SRC is
copied into it under its own name; otherwise DST becomes the copy. Missing
parent directories in the sandbox are made. Permission bits are kept;
symbolic links are skipped with a warning (the file API does not make them).
A local path with a colon in its first part is written ./a:b.`,
		Example: `  sandpod cp ./project sb:/workspace/project
  sandpod cp sb:results/out.csv .
  sandpod cp sb:logs ./logs-from-sb
  tar cz data | sandpod cp - sb:data.tgz
  sandpod cp sb:report.json - | jq .`,
		Args:              exactArgs("SRC", "DST"),
		ValidArgsFunction: a.completeCopy,
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := parseCopyArg(args[0]), parseCopyArg(args[1])
			switch {
			case src.remote() && dst.remote():
				return usageErrorf("cp copies between this machine and a sandbox: copy from %s to a local path first", src.sandbox)
			case !src.remote() && !dst.remote():
				return usageErrorf("cp needs a sandbox side: write it NAME:PATH (e.g. sb:/workspace/file)")
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			cp := &copier{a: a}
			if dst.remote() {
				cp.files = c.Sandbox(dst.sandbox).Files()
				err = cp.upload(cmd.Context(), src, dst)
			} else {
				cp.files = c.Sandbox(src.sandbox).Files()
				err = cp.download(cmd.Context(), src, dst)
			}
			return a.commandError(err)
		},
	}
}

// copyArg is one side of cp: NAME:PATH in a sandbox, a local path, or -.
type copyArg struct {
	sandbox, path string
	stdio         bool
}

func (c copyArg) remote() bool { return c.sandbox != "" }

func (c copyArg) String() string {
	if c.remote() {
		return c.sandbox + ":" + c.path
	}
	return c.path
}

// parseCopyArg reads NAME:PATH when what precedes the first colon is a
// sandbox name (a DNS-1123 label) and the argument does not start like a
// local path (/, ., ~).
func parseCopyArg(s string) copyArg {
	if s == "-" {
		return copyArg{path: s, stdio: true}
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") {
		return copyArg{path: s}
	}
	name, p, ok := strings.Cut(s, ":")
	if !ok || !isDNSLabel(name) {
		return copyArg{path: s}
	}
	return copyArg{sandbox: name, path: p}
}

func isDNSLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// copier copies files to or from one sandbox, counting what it moved for
// the progress line.
type copier struct {
	a     *app
	files *sandpod.Files
	count atomic.Int64
	bytes atomic.Int64
}

func (cp *copier) detail() string {
	return fmt.Sprintf("%d files, %s", cp.count.Load(), humanBytes(cp.bytes.Load()))
}

func (cp *copier) warn(format string, args ...any) {
	fmt.Fprintf(cp.a.err, "sandpod: cp: warning: "+format+"\n", args...)
}

// remoteDir reports whether p is a directory in the sandbox (false when
// it does not exist).
func (cp *copier) remoteDir(ctx context.Context, p string) (exists, dir bool, err error) {
	fi, err := cp.files.Stat(ctx, p)
	if errors.Is(err, sandpod.ErrFileNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, fi.IsDir, nil
}

// remoteJoin is dir/name, keeping "" (the workspace) relative.
func remoteJoin(dir, name string) string {
	if dir == "" {
		return name
	}
	return path.Join(dir, name)
}

func (cp *copier) upload(ctx context.Context, src, dst copyArg) error {
	what := "copying " + src.String() + " to " + dst.String()
	return cp.a.duringWith(ctx, what, cp.detail, func(ctx context.Context) error {
		if src.stdio {
			if strings.HasSuffix(dst.path, "/") {
				return usageErrorf("cp: standard input needs a file name in the sandbox, not the directory %s", dst)
			}
			return cp.putFile(ctx, cp.a.in, dst.path, 0)
		}
		st, err := os.Stat(src.path)
		if err != nil {
			return exitErrorf(ExitNoInput, "cp: %s: %v", src.path, unwrapPathError(err))
		}
		exists, isDir, err := cp.remoteDir(ctx, dst.path)
		if err != nil {
			return err
		}
		target := dst.path
		if isDir || strings.HasSuffix(dst.path, "/") {
			target = remoteJoin(dst.path, filepath.Base(filepath.Clean(src.path)))
		}
		if !st.IsDir() {
			return cp.putLocalFile(ctx, src.path, target, st.Mode())
		}
		// A link named on the command line is followed (the walk does not
		// follow links below it).
		root, err := filepath.EvalSymlinks(src.path)
		if err != nil {
			return exitErrorf(ExitNoInput, "cp: %s: %v", src.path, unwrapPathError(err))
		}
		if exists && !isDir && target == dst.path {
			return exitErrorf(ExitConflict, "cp: %s is a file: cannot copy the directory %s onto it", dst, src.path)
		}
		return cp.putTree(ctx, root, target)
	})
}

func (cp *copier) putLocalFile(ctx context.Context, local, remote string, mode fs.FileMode) error {
	f, err := os.Open(local)
	if err != nil {
		return exitErrorf(ExitNoInput, "cp: %s: %v", local, unwrapPathError(err))
	}
	defer f.Close()
	return cp.putFile(ctx, f, remote, mode)
}

func (cp *copier) putFile(ctx context.Context, r io.Reader, remote string, mode fs.FileMode) error {
	opts := []sandpod.FileOption{sandpod.WithParents()}
	if perm := mode.Perm(); perm != 0 {
		opts = append(opts, sandpod.WithMode(perm))
	}
	if _, err := cp.files.Write(ctx, remote, countingReader{r, &cp.bytes}, opts...); err != nil {
		return err
	}
	cp.count.Add(1)
	return nil
}

// putTree copies the local directory root to the sandbox path target.
func (cp *copier) putTree(ctx context.Context, root, target string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return exitErrorf(ExitNoInput, "cp: %s: %v", p, unwrapPathError(err))
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		remote := target
		if rel != "." {
			remote = remoteJoin(target, filepath.ToSlash(rel))
		}
		info, err := d.Info()
		if err != nil {
			return exitErrorf(ExitNoInput, "cp: %s: %v", p, unwrapPathError(err))
		}
		switch {
		case d.IsDir():
			_, err := cp.files.MkDir(ctx, remote, sandpod.WithParents(), sandpod.WithMode(info.Mode().Perm()|0o700))
			return err
		case d.Type().IsRegular():
			return cp.putLocalFile(ctx, p, remote, info.Mode())
		case d.Type()&fs.ModeSymlink != 0:
			cp.warn("skipped the symbolic link %s", p)
		default:
			cp.warn("skipped %s: not a regular file or directory", p)
		}
		return nil
	})
}

func (cp *copier) download(ctx context.Context, src, dst copyArg) error {
	what := "copying " + src.String() + " to " + dst.String()
	return cp.a.duringWith(ctx, what, cp.detail, func(ctx context.Context) error {
		fi, err := cp.files.Stat(ctx, src.path)
		if err != nil {
			return err
		}
		if dst.stdio {
			if fi.IsDir {
				return usageErrorf("cp: %s is a directory: standard output takes one file (copy it to a local directory)", src)
			}
			return cp.getFile(ctx, src.path, nil, cp.a.out)
		}
		target := dst.path
		st, err := os.Stat(dst.path)
		localDir := err == nil && st.IsDir()
		if localDir || strings.HasSuffix(dst.path, "/") {
			if base := path.Base(path.Clean("/" + src.path)); base != "/" {
				target = filepath.Join(dst.path, base)
			}
		}
		if !fi.IsDir {
			return cp.getLocalFile(ctx, src.path, target, fi.Mode, false)
		}
		if err == nil && !st.IsDir() && target == dst.path {
			return exitErrorf(ExitConflict, "cp: %s is a file: cannot copy the directory %s onto it", dst.path, src)
		}
		return cp.getTree(ctx, src.path, target, fi.Mode)
	})
}

// getLocalFile writes the sandbox file remote to the local path. Inside a
// tree (nofollow) an existing symbolic link at the path is not followed.
func (cp *copier) getLocalFile(ctx context.Context, remote, local string, mode fs.FileMode, nofollow bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if nofollow {
		flags |= syscall.O_NOFOLLOW
	}
	perm := mode.Perm()
	if perm == 0 {
		perm = 0o644
	}
	f, err := os.OpenFile(local, flags, perm)
	if err != nil {
		return exitErrorf(ExitCantCreate, "cp: %s: %v", local, unwrapPathError(err))
	}
	err = cp.getFile(ctx, remote, f, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		return exitErrorf(ExitCantCreate, "cp: %s: %v", local, unwrapPathError(cerr))
	}
	return err
}

// getFile streams a sandbox file to w (f, when w is a local file, to
// report its errors as local ones).
func (cp *copier) getFile(ctx context.Context, remote string, f *os.File, w io.Writer) error {
	r, err := cp.files.Read(ctx, remote)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, 256<<10)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				if f != nil {
					return exitErrorf(ExitCantCreate, "cp: %s: %v", f.Name(), unwrapPathError(werr))
				}
				return exitErrorf(ExitCantCreate, "cp: standard output: %v", unwrapPathError(werr))
			}
			cp.bytes.Add(int64(n))
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	cp.count.Add(1)
	return nil
}

// getTree copies the sandbox directory remote to the local path local.
// Entry names come from the sandbox, which runs untrusted code: a name
// that is not a plain file name is refused rather than joined.
func (cp *copier) getTree(ctx context.Context, remote, local string, mode fs.FileMode) error {
	if err := os.Mkdir(local, mode.Perm()|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return exitErrorf(ExitCantCreate, "cp: %s: %v", local, unwrapPathError(err))
	}
	if st, err := os.Lstat(local); err != nil || !st.IsDir() {
		return exitErrorf(ExitCantCreate, "cp: %s: not a directory", local)
	}
	for fi, err := range cp.files.Entries(ctx, remote) {
		if err != nil {
			return err
		}
		if fi.Name == "" || fi.Name == "." || fi.Name == ".." || strings.ContainsAny(fi.Name, "/\x00") {
			cp.warn("skipped an entry of %s with the unsafe name %q", remote, fi.Name)
			continue
		}
		rp, lp := remoteJoin(remote, fi.Name), filepath.Join(local, fi.Name)
		switch {
		case fi.IsSymlink:
			cp.warn("skipped the symbolic link %s", rp)
		case fi.IsDir:
			if err := cp.getTree(ctx, rp, lp, fi.Mode); err != nil {
				return err
			}
		default:
			if err := cp.getLocalFile(ctx, rp, lp, fi.Mode, true); err != nil {
				return err
			}
		}
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// unwrapPathError drops the operation and path of a *PathError (the
// message names the path already).
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
