package agent

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// sandboxFS is the file system the files API works in: the sandbox's own,
// by absolute paths, exactly as its commands see it. The agent runs inside
// the sandbox's isolation (a local sandbox's root, or a pod's container),
// so there is nothing beyond it to confine to. What it creates belongs to
// the user commands run as (owner), so that they can change it.
type sandboxFS struct {
	// owner is the user commands run as, when the agent runs as another
	// (the local engine's root agent); nil leaves files as made.
	owner *syscall.Credential
}

func (sandboxFS) Open(name string) (*os.File, error)          { return os.Open(name) }
func (sandboxFS) Stat(name string) (fs.FileInfo, error)       { return os.Stat(name) }
func (sandboxFS) Lstat(name string) (fs.FileInfo, error)      { return os.Lstat(name) }
func (sandboxFS) Remove(name string) error                    { return os.Remove(name) }
func (sandboxFS) RemoveAll(name string) error                 { return os.RemoveAll(name) }
func (sandboxFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (f sandboxFS) Mkdir(name string, perm fs.FileMode) error { return f.mkdir(name, perm) }

func (f sandboxFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err == nil && flag&os.O_CREATE != 0 {
		if err := f.own(name); err != nil {
			file.Close()
			return nil, err
		}
	}
	return file, err
}

// MkdirAll makes name and its missing parents, each owned as mkdir does.
func (f sandboxFS) MkdirAll(name string, perm fs.FileMode) error {
	if fi, err := os.Stat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.ENOTDIR} // as os.MkdirAll
	}
	if parent := path.Dir(name); parent != name {
		if err := f.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	err := f.mkdir(name, perm)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := os.Stat(name); serr == nil && fi.IsDir() {
			return nil // made meanwhile
		}
	}
	return err
}

func (f sandboxFS) mkdir(name string, perm fs.FileMode) error {
	if err := os.Mkdir(name, perm); err != nil {
		return err
	}
	return f.own(name)
}

func (f sandboxFS) own(name string) error {
	if f.owner == nil {
		return nil
	}
	return os.Lchown(name, int(f.owner.Uid), int(f.owner.Gid))
}
