package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// The files API reads only regular files and lists only directories. The
// sandbox's code can put anything at a path: a fifo (whose open blocks
// until a writer comes, holding an agent thread), a link to /dev/zero
// (endless), a socket or a device node. Such a path is refused before it
// is opened, and once more on what the open returned (the path may have
// been swapped in between): the open itself never blocks (O_NONBLOCK) and
// never makes a terminal the agent's (O_NOCTTY).

// fileKind names what a file mode is, for a message.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a fifo (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a Unix socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// readable says whether the files API may open a file of mode m: a regular
// file, or a directory where the call wants one (dir).
func readable(m fs.FileMode, dir bool) bool {
	if dir {
		return m.IsDir()
	}
	return m.IsRegular() || m.IsDir() // a directory gets IS_A_DIRECTORY from the caller
}

// openChecked opens abs for reading (following links, as commands do)
// when it is a regular file or a directory, or with dir a directory only,
// and returns it with what fstat says it is.
func (s *Server) openChecked(op, p, abs string, dir bool) (*os.File, fs.FileInfo, error) {
	fi, err := s.root.Stat(abs)
	if err != nil {
		return nil, nil, fileError(op, p, err)
	}
	if !readable(fi.Mode(), dir) {
		return nil, nil, refusal(op, p, fi.Mode(), dir)
	}
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if dir {
		flags |= syscall.O_DIRECTORY
	}
	f, err := s.root.OpenFile(abs, flags, 0)
	if err != nil {
		return nil, nil, fileError(op, p, err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fileError(op, p, err)
	}
	if !readable(fi.Mode(), dir) {
		f.Close()
		return nil, nil, refusal(op, p, fi.Mode(), dir)
	}
	return f, fi, nil
}

// refusal answers a path of the wrong kind: NOT_A_DIRECTORY for a regular
// file where a directory was wanted, else NOT_A_REGULAR_FILE.
func refusal(op, p string, m fs.FileMode, dir bool) error {
	if dir && m.IsRegular() {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonNotADirectory, "%s: %q is not a directory", op, p)
	}
	return errinfo.New(codes.FailedPrecondition, errinfo.ReasonNotARegularFile, map[string]string{"path": p},
		fmt.Sprintf("%s: %q is %s, not a regular file or directory; the files API opens nothing else", op, p, fileKind(m)))
}

// walkDirs calls fn for each entry below dir, depth first and in name
// order, as filepath.WalkDir does (fn's fs.SkipDir skips a directory; a
// directory gone or unreadable is skipped). It opens each directory with
// O_DIRECTORY|O_NONBLOCK: a fifo the sandbox swaps in for one fails at
// once rather than block the walk until a writer comes.
func walkDirs(dir string, fn func(p string, d fs.DirEntry) error) error {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil // gone meanwhile, or not a directory any more
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, d := range ents {
		p := filepath.Join(dir, d.Name())
		switch err := fn(p, d); {
		case errors.Is(err, fs.SkipDir):
			continue
		case err != nil:
			return err
		}
		if d.IsDir() {
			if err := walkDirs(p, fn); err != nil {
				return err
			}
		}
	}
	return nil
}
