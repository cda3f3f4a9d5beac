package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultIDRegistry is where the host-wide registry of id ranges lives
// unless Config.IDRegistry says otherwise: outside every state directory
// (the default one is /var/lib/sandpod), kept across reboots, since a
// suspended sandbox's files keep their ids.
const DefaultIDRegistry = "/var/lib/sandpod-ids"

// idRegistry is the registry's directory: ranges.json, the table, and
// lock, which every engine of the host flocks while it reads and writes.
type idRegistry struct{ dir string }

func openIDRegistry(dir string) (*idRegistry, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("id range registry %s: %w", dir, err)
	}
	r := &idRegistry{dir: dir}
	return r, r.update(func(t rangeTable) (rangeTable, error) { return t, nil })
}

// idRegistryLockWait bounds the wait for another engine's update (each
// takes milliseconds).
const idRegistryLockWait = 30 * time.Second

// update runs fn on the table under the host-wide lock and saves what it
// returns (written whole, fsynced, renamed into place).
func (r *idRegistry) update(fn func(rangeTable) (rangeTable, error)) error {
	lock, err := os.OpenFile(filepath.Join(r.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("id range registry: %w", err)
	}
	defer lock.Close() // and the flock with it
	deadline := time.Now().Add(idRegistryLockWait)
	for {
		err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("id range registry: lock: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("id range registry %s: another process has held its lock for %s", r.dir, idRegistryLockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	path := filepath.Join(r.dir, "ranges.json")
	t := rangeTable{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("id range registry: %w", err)
	default:
		if err := json.Unmarshal(b, &t); err != nil {
			return fmt.Errorf("id range registry %s is damaged (%v): with every sandpod serve of this host stopped, remove it; each serve enters its sandboxes' ranges again at start", path, err)
		}
	}
	out, err := fn(t)
	if err != nil {
		return err
	}
	nb, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	if string(nb) == string(b) {
		return nil
	}
	if err := replaceFile(path, 0o600, func(f *os.File) error {
		_, err := f.Write(nb)
		return err
	}); err != nil {
		return fmt.Errorf("id range registry: %w", err)
	}
	return nil
}

// stateDirGone reports whether an engine's state directory no longer
// exists (its ranges can be given out again).
func stateDirGone(dir string) bool {
	_, err := os.Stat(dir)
	return errors.Is(err, fs.ErrNotExist)
}
