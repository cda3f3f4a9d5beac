package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Restored says what RestoreBackup did.
type Restored struct {
	Store  string
	Backup BackupInfo
	// Aside is where the store that was replaced is kept ("" when there
	// was none).
	Aside string
	// Sandboxes the restored store holds; Orphans are sandbox directories
	// it has no record of (made after the backup was taken).
	Sandboxes int
	Orphans   []string
}

// RestoreBackup puts a state directory's backup in place of its store, for
// a serve that refuses to start on a damaged store. It is a command of its
// own rather than a serve flag so that it happens once, when asked: a flag
// left in a service unit would roll the state back at every start. It
// checks the backup as thoroughly as serve checks a store, refuses to
// replace a sound store unless force is set, and keeps the store it
// replaces beside it (state.db.damaged-<UTC time>). serve must not be
// running: the store's lock is taken for the whole swap.
func RestoreBackup(stateDir string, force bool) (Restored, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return Restored{}, err
	}
	rep, err := checkState(abs, true)
	if err != nil {
		return Restored{}, err
	}
	out := Restored{Store: rep.Store, Backup: rep.Backup}
	if !rep.Backup.Usable() {
		return out, fmt.Errorf("cannot restore: the backup %s; nothing was changed", rep.Backup)
	}
	bf, err := inspectStore(rep.Backup.Path, time.Second)
	if err != nil {
		return out, err
	}
	if _, problem := judgeStore(bf, rep.Dirs, true); problem != "" {
		return out, fmt.Errorf("cannot restore: the backup %s %s, so serve would refuse it too; nothing was changed", rep.Backup.Path, problem)
	}
	sound := rep.Exists && rep.Problem == ""
	if sound && !force {
		return out, fmt.Errorf("%s is sound (%d sandboxes): restoring the backup %s would roll it back and lose what changed since. Nothing was changed; add --force to restore anyway",
			rep.Store, rep.Sandboxes, rep.Backup)
	}

	unlock, err := lockStore(rep.Store)
	if err != nil {
		return out, err
	}
	defer unlock()
	tmp := rep.Store + ".restore.tmp"
	if err := copyFile(rep.Backup.Path, tmp, false); err != nil {
		_ = os.Remove(tmp)
		return out, fmt.Errorf("copy the backup: %w; nothing was changed", err)
	}
	if f, err := inspectStore(tmp, time.Second); err != nil || f.damage != "" {
		_ = os.Remove(tmp)
		return out, fmt.Errorf("the copy of the backup does not read back (%v%s); nothing was changed", err, f.damage)
	}
	if rep.Exists {
		kind := "damaged"
		if sound {
			kind = "replaced"
		}
		if out.Aside, err = keepAside(rep.Store, kind); err != nil {
			_ = os.Remove(tmp)
			return out, fmt.Errorf("keep %s aside: %w; nothing was changed", rep.Store, err)
		}
	}
	if err := os.Rename(tmp, rep.Store); err != nil {
		_ = os.Remove(tmp)
		return out, err
	}
	if err := syncDir(abs); err != nil {
		return out, err
	}
	out.Sandboxes = len(bf.records)
	out.Orphans = orphanDirs(bf, rep.Dirs)
	return out, nil
}

// lockStore takes the lock bbolt takes (flock, exclusive) on an existing
// store, so no serve opens it during the swap.
func lockStore(path string) (unlock func(), err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use: stop the sandpod serve running on this state directory first", path)
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}

// keepAside copies path to path.<kind>-<UTC time>, never overwriting.
func keepAside(path, kind string) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		aside := fmt.Sprintf("%s.%s-%s", path, kind, stamp)
		if i > 0 {
			aside += fmt.Sprintf("-%d", i)
		}
		err := copyFile(path, aside, true)
		if !errors.Is(err, fs.ErrExist) {
			return aside, err
		}
	}
	return "", fmt.Errorf("too many files named %s.%s-%s*", path, kind, stamp)
}

// copyFile copies src to dst (mode 0600: stores hold agent secrets) and
// syncs it; exclusive refuses an existing dst.
func copyFile(src, dst string, exclusive bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if exclusive {
		flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	}
	out, err := os.OpenFile(dst, flags, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(0o600)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
