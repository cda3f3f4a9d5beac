package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The files of a state directory's store.
const (
	storeFile  = "state.db"
	backupFile = "state.db.bak"
)

// lockWait is how long an open waits for bbolt's file lock: a second
// `serve` on the same state directory holds it. A variable for tests.
var lockWait = 5 * time.Second

// StateReport is what a state directory holds and whether `serve` starts
// on it.
type StateReport struct {
	StateDir, Store string
	Exists          bool
	// Fresh: no store and no trace of sandboxes; serve makes a new store.
	Fresh bool
	// Problem completes "the state store <Store> ..." when serve refuses to
	// start; "" when it starts.
	Problem             string
	Sandboxes, Requests int
	// Dirs are the sandbox directories (ns/name) under <StateDir>/sandboxes;
	// Orphans those that no record owns.
	Dirs, Orphans []string
	// Snapshots are the snapshot records (ns/name); SnapshotOrphans the
	// snapshot directories no record owns; SnapshotsMissing the records
	// whose files are gone.
	Snapshots, SnapshotOrphans, SnapshotsMissing []string
	Backup                                       BackupInfo
}

// Err is the StoreError serve refuses to start with, or nil.
func (r StateReport) Err() error {
	if r.Problem == "" {
		return nil
	}
	return &StoreError{Path: r.Store, Problem: r.Problem, StateDir: r.StateDir, Dirs: len(r.Dirs), Backup: r.Backup}
}

// CheckState inspects a state directory without changing anything: its
// store, its sandbox directories and its backup. It fails only when it
// cannot look (the store is in use by a running serve, or unreadable).
func CheckState(stateDir string) (StateReport, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return StateReport{}, err
	}
	return checkState(abs, true)
}

// checkState is CheckState on an absolute path; the backup is inspected in
// full only when asked or when the store is unusable (the refusal names it).
func checkState(dir string, withBackup bool) (StateReport, error) {
	r := StateReport{StateDir: dir, Store: filepath.Join(dir, storeFile)}
	f, err := inspectStore(r.Store, lockWait)
	if err != nil {
		return r, err
	}
	if r.Dirs, err = sandboxDirs(dir); err != nil {
		return r, err
	}
	bak := filepath.Join(dir, backupFile)
	_, statErr := os.Stat(bak)
	r.Exists, r.Sandboxes, r.Requests = f.exists, len(f.records), f.requests
	r.Fresh, r.Problem = judgeStore(f, r.Dirs, statErr == nil)
	if r.Problem == "" {
		r.Orphans = orphanDirs(f, r.Dirs)
		r.Snapshots = f.snaps
		r.SnapshotOrphans, r.SnapshotsMissing = snapshotDirProblems(dir, f.snaps)
	}
	r.Backup = BackupInfo{Path: bak, Exists: statErr == nil}
	if withBackup || r.Problem != "" {
		r.Backup = inspectBackup(bak)
	}
	return r, nil
}

// inspectBackup reads a backup as thoroughly as a store.
func inspectBackup(path string) BackupInfo {
	b := BackupInfo{Path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return b
	}
	b.Exists, b.Taken = true, fi.ModTime()
	f, err := inspectStore(path, time.Second)
	switch {
	case err != nil:
		b.Problem = "cannot be read: " + err.Error()
	case f.damage != "":
		b.Problem = f.damage
	case !f.hasSandboxes:
		b.Problem = "has no sandboxes bucket"
	}
	b.Sandboxes = len(f.records)
	return b
}

// inspectStore reads a store file from end to end without changing it and
// says what it found. Damage is reported in storeFacts.damage, never as a
// panic: the header is checked before bbolt maps the file, and bbolt reads a
// private copy with faults turned into panics that are recovered here. (A
// panic inside bbolt.Open leaves its mapping behind, and a mapping keeps the
// file's lock: on the store itself that would lock out the engine.) The
// error is for what is not damage: the store is in use by a running serve,
// or cannot be read at all.
func inspectStore(path string, wait time.Duration) (storeFacts, error) {
	var f storeFacts
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	f.exists = true
	if !fi.Mode().IsRegular() {
		f.damage = "is not a regular file (" + fi.Mode().Type().String() + ")"
		return f, nil
	}
	src, err := os.Open(path)
	if err != nil {
		return f, err
	}
	defer src.Close() // and its lock
	if err := lockShared(src, wait); err != nil {
		return f, fmt.Errorf("%s is in use: is a sandpod serve running on this state directory? (%v)", path, err)
	}
	if _, err := checkHeader(src, fi.Size()); err != nil {
		f.damage = err.Error()
		return f, nil
	}
	cp, err := privateCopy(src, filepath.Dir(path))
	if err != nil {
		return f, fmt.Errorf("copy %s to inspect it: %w", path, err)
	}
	return readCopy(cp, f)
}

// lockShared takes a shared flock, as a read-only bbolt open does: it waits
// while a serve holds the exclusive one.
func lockShared(f *os.File, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// privateCopy copies src into an unlinked temporary file, beside it when it
// can (the store's disk has room for it), else in $TMPDIR.
func privateCopy(src *os.File, dir string) (*os.File, error) {
	cp, err := os.CreateTemp(dir, ".inspect-*")
	if err != nil {
		cp, err = os.CreateTemp("", "sandpod-inspect-*")
	}
	if err != nil {
		return nil, err
	}
	_ = os.Remove(cp.Name())
	if _, err := io.Copy(cp, io.NewSectionReader(src, 0, 1<<62)); err != nil {
		cp.Close()
		return nil, err
	}
	return cp, nil
}

// damage is a finding about a store's content, as opposed to an error
// that kept us from reading it.
type damage string

func (d damage) Error() string { return string(d) }

// readCopy opens a private copy of a store with bbolt, read-only, walks it
// and runs bbolt's check. It closes cp.
func readCopy(cp *os.File, f storeFacts) (storeFacts, error) {
	defer cp.Close() // also when bbolt panicked in Open
	var db *bolt.DB
	openFile := func(string, int, os.FileMode) (*os.File, error) { return cp, nil }
	err := safely(func() error {
		var err error
		db, err = bolt.Open(cp.Name(), 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, OpenFile: openFile})
		if err != nil {
			return err
		}
		return db.View(func(tx *bolt.Tx) error { return walkStore(tx, &f) })
	})
	if db != nil {
		_ = safely(db.Close)
	}
	var d damage
	switch {
	case err == nil:
	case errors.As(err, &d):
		f.damage = string(d)
	default:
		f.damage = "cannot be read by bbolt: " + err.Error()
	}
	return f, nil
}

// safely runs fn with memory faults turned into panics (bbolt reads the
// file through mmap: a page it no longer has is a SIGBUS) and any panic
// turned into a damage.
func safely(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = damage(fmt.Sprintf("makes bbolt fail while reading it (%v)", p))
		}
	}()
	return fn()
}

// walkStore reads every page of every bucket in this goroutine, where a
// fault is a panic that safely recovers, decodes the records, then runs
// bbolt's consistency check (free list, page references, key order) over
// pages now known to be readable.
func walkStore(tx *bolt.Tx, f *storeFacts) error {
	if err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return touchBucket(b) }); err != nil {
		return damage("cannot be read by bbolt: " + err.Error())
	}
	if b := tx.Bucket(bucketSandboxes); b != nil {
		f.hasSandboxes = true
		err := b.ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return damage(fmt.Sprintf("holds a sandbox record that does not decode (%q: %v)", k, err))
			}
			if r.key() != string(k) || len(r.UID) < 16 {
				return damage(fmt.Sprintf("holds a sandbox record that does not match its key (%q: namespace %q, name %q, uid %q)", k, r.Namespace, r.Name, r.UID))
			}
			f.records = append(f.records, r)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if b := tx.Bucket(bucketRequests); b != nil {
		f.requests = b.Stats().KeyN
	}
	if b := tx.Bucket(bucketSnapshots); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var s snapRecord
			if err := json.Unmarshal(v, &s); err != nil || s.key() != string(k) {
				return damage(fmt.Sprintf("holds a snapshot record that does not decode or match its key (%q)", k))
			}
			f.snaps = append(f.snaps, s.key())
			return nil
		})
		if err != nil {
			return err
		}
	}
	var errs []error
	for err := range tx.Check() {
		errs = append(errs, err)
	}
	switch {
	case len(errs) == 1:
		return damage("fails bbolt's consistency check: " + errs[0].Error())
	case len(errs) > 1:
		return damage(fmt.Sprintf("fails bbolt's consistency check: %v (and %d more)", errs[0], len(errs)-1))
	}
	return nil
}

// touchBucket reads every key and value of b and its nested buckets.
func touchBucket(b *bolt.Bucket) error {
	var sum byte
	err := b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				return touchBucket(nb)
			}
			return nil
		}
		for i := 0; i < len(v); i += 512 {
			sum ^= v[i]
		}
		return nil
	})
	runtime.KeepAlive(sum)
	return err
}

// sandboxDirs lists the sandbox directories (ns/name) of a state directory.
func sandboxDirs(stateDir string) ([]string, error) {
	root := filepath.Join(stateDir, "sandboxes")
	nss, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range nss {
		if !ns.IsDir() {
			continue
		}
		names, err := os.ReadDir(filepath.Join(root, ns.Name()))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if n.IsDir() {
				out = append(out, ns.Name()+"/"+n.Name())
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// snapshotDirProblems compares the snapshot directories of a state
// directory with the snapshot records: directories without a record, and
// records without their files.
func snapshotDirProblems(stateDir string, recs []string) (orphans, missing []string) {
	known := map[string]bool{}
	for _, k := range recs {
		known[k] = true
		ns, name, _ := strings.Cut(k, "/")
		if _, err := os.Stat(snapFiles(stateDir, ns, name)); err != nil {
			missing = append(missing, k)
		}
	}
	root := filepath.Join(stateDir, "snapshots")
	nss, _ := os.ReadDir(root)
	for _, ns := range nss {
		ents, _ := os.ReadDir(filepath.Join(root, ns.Name()))
		for _, ent := range ents {
			k := ns.Name() + "/" + ent.Name()
			if ent.IsDir() && !strings.HasPrefix(ent.Name(), ".") && !known[k] {
				orphans = append(orphans, k)
			}
		}
	}
	sort.Strings(orphans)
	return orphans, missing
}
