package engine

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// backupEvery is the least time between two backups while the state keeps
// changing. A backup copies the whole store (a few MB with thousands of
// sandboxes) and syncs it: every 5 s bounds that cost under a burst of
// claims, and bounds what a backup can miss after a kill -9 to the last 5 s
// of changes. A clean stop always takes a last one.
const backupEvery = 5 * time.Second

// backups keeps <state-dir>/state.db.bak a consistent copy of the store:
// one at start (after the store passed its checks), one at most every
// `every` while the state changes, and one at a clean stop. Each is bbolt's
// online backup (Tx.WriteTo inside a read transaction: a snapshot of one
// committed state while writes go on), written to a temporary file, synced
// and renamed over the previous backup, so the backup file is always a
// whole one.
type backups struct {
	path  string
	every time.Duration
	dirty atomic.Bool
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

func (s *store) startBackups(path string, every time.Duration) {
	s.backups = backups{path: path, every: every, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if err := writeBackup(s.db, path); err != nil {
		s.log.Warn("state backup failed; will try again after the next change", "backup", path, "err", err)
		s.dirty.Store(true)
	}
	go s.backupLoop()
}

// changed marks the backup out of date after a committed write.
func (s *store) changed() {
	s.dirty.Store(true)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *store) backupLoop() {
	defer close(s.done)
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		if wait := time.Until(last.Add(s.every)); wait > 0 {
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
		}
		if !s.dirty.Swap(false) {
			continue
		}
		last = time.Now()
		if err := writeBackup(s.db, s.path); err != nil {
			s.log.Warn("state backup failed; will try again", "backup", s.path, "err", err)
			s.changed()
		}
	}
}

// stopBackups ends the loop and takes a last backup if anything changed
// since the previous one.
func (s *store) stopBackups() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	if s.dirty.Swap(false) {
		if err := writeBackup(s.db, s.path); err != nil {
			s.log.Warn("state backup at stop failed", "backup", s.path, "err", err)
		}
	}
}

// writeBackup writes a consistent copy of db to path, atomically.
func writeBackup(db *bolt.DB, path string) error {
	// 0600: it holds every sandbox's agent secret.
	return replaceFile(path, 0o600, func(f *os.File) error {
		return db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(f)
			return err
		})
	})
}

// replaceFile writes path whole: write fills path.tmp (mode perm), which
// is synced and renamed over path, so path never holds half a file.
func replaceFile(path string, perm os.FileMode, write func(*os.File) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	err = f.Chmod(perm)
	if err == nil {
		err = write(f)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
