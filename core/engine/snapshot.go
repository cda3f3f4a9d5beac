package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/labels"
)

// Snapshots of the local engine: a copy of a sandbox's workspace under
// <state>/snapshots/<ns>/<name>/files, owned by the reserved snapshot id
// range (snapfs_linux.go), with a record in the store. Files only: the
// processes' memory and network state are not kept.

// bucketSnapshots (ns/name -> snapRecord) is made with the first snapshot,
// so a store of an engine that never took one is laid out as before.
var bucketSnapshots = []byte("snapshots")

// Fork methods: how a sandbox is made from a snapshot, chosen when the
// engine starts (probeOverlay).
const (
	forkOverlay = "overlayfs" // the snapshot is the read-only lower layer of each fork
	forkCopy    = "copy"      // each fork gets a copy (a reflink where the file system can)
)

// Default snapshot limits of LocalEngineConfig.snapshots.
const (
	defaultMaxSnapshotsPerNamespace = 100
	defaultMaxSnapshotBytes         = 10 << 30
)

// snapRecord is the persisted state of one snapshot.
type snapRecord struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	UID       string            `json:"uid"`
	Labels    map[string]string `json:"labels,omitempty"`
	Source    string            `json:"source"`
	Template  string            `json:"template"`
	RunAsUID  uint32            `json:"runAsUID"`
	Created   time.Time         `json:"created"`
	Bytes     int64             `json:"bytes"`
	Entries   int64             `json:"entries"`
	Skipped   []string          `json:"skipped,omitempty"`
	// TakenBy says how its files were made: "reflink" or "copy".
	TakenBy string `json:"takenBy"`
	Took    string `json:"took"`
	// Message explains a snapshot whose files are missing.
	Message string `json:"message,omitempty"`
}

func (s *snapRecord) key() string { return s.Namespace + "/" + s.Name }

func snapDir(stateDir, ns, name string) string {
	return filepath.Join(stateDir, "snapshots", ns, name)
}

// snapFiles is the snapshot's tree: the lower layer of its forks.
func snapFiles(stateDir, ns, name string) string {
	return filepath.Join(snapDir(stateDir, ns, name), "files")
}

// usersLocked lists who needs the snapshot's files: sandboxes layered on it
// or not yet made from it, and pools that name it. Callers hold e.mu.
func (e *Engine) usersLocked(ns, name string) []string {
	var out []string
	for _, sb := range e.sandboxes {
		r := &sb.rec
		if r.Namespace == ns && r.Snapshot == name && (r.Layered || !r.Seeded) {
			out = append(out, "sandbox/"+r.Name)
		}
	}
	for _, p := range e.pools {
		if p.namespace == ns && p.snapshot == name {
			out = append(out, "pool/"+p.name)
		}
	}
	sort.Strings(out)
	return out
}

// Snapshot returns one snapshot.
func (e *Engine) Snapshot(ns, name string) (SnapshotInfo, error) {
	ns = nsOr(ns)
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.snaps[ns+"/"+name]
	if s == nil {
		return SnapshotInfo{}, snapshotNotFound(ns, name)
	}
	return e.snapViewLocked(s), nil
}

// Snapshots returns the matching snapshots of a namespace by name.
func (e *Engine) Snapshots(ns string, sel labels.Selector) []SnapshotInfo {
	ns = nsOr(ns)
	e.mu.Lock()
	var out []SnapshotInfo
	for _, s := range e.snaps {
		if s.Namespace == ns && (sel == nil || sel.Matches(labels.Set(s.Labels))) {
			out = append(out, e.snapViewLocked(s))
		}
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DeleteSnapshot removes a snapshot nothing uses, with its files.
func (e *Engine) DeleteSnapshot(ns, name string) error {
	ns = nsOr(ns)
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	e.mu.Lock()
	s := e.snaps[ns+"/"+name]
	if s == nil {
		e.mu.Unlock()
		return snapshotNotFound(ns, name)
	}
	if users := e.usersLocked(ns, name); len(users) > 0 {
		e.mu.Unlock()
		return &InUseError{Namespace: ns, Name: name, Users: users}
	}
	if err := e.store.update(func(tx *bolt.Tx) error {
		if bk := tx.Bucket(bucketSnapshots); bk != nil {
			return bk.Delete([]byte(s.key()))
		}
		return nil
	}); err != nil {
		e.mu.Unlock()
		return unavailable("save", err)
	}
	delete(e.snaps, s.key())
	e.mu.Unlock()
	// Out of the way first, so a new snapshot of the same name never meets
	// half-removed files.
	dir := snapDir(e.cfg.StateDir, ns, name)
	trash := filepath.Join(e.cfg.StateDir, "snapshots", ns, ".deleted-"+s.UID)
	if err := os.Rename(dir, trash); err == nil {
		dir = trash
	}
	if err := os.RemoveAll(dir); err != nil {
		e.log.Warn("remove snapshot files", "snapshot", s.key(), "err", err)
	}
	return nil
}

func (s *store) putSnap(sr *snapRecord, reqKey string, req *requestEntry) error {
	b, err := json.Marshal(sr)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		if req != nil {
			if err := putRequest(tx, reqKey, *req); err != nil {
				return err
			}
		}
		bk, err := tx.CreateBucketIfNotExists(bucketSnapshots)
		if err != nil {
			return err
		}
		return bk.Put([]byte(sr.key()), b)
	})
}

// putMany saves records and their request ids in one transaction (a fork).
func (s *store) putMany(recs []*record, reqs map[string]requestEntry) error {
	return s.update(func(tx *bolt.Tx) error {
		for k, req := range reqs {
			if err := putRequest(tx, k, req); err != nil {
				return err
			}
		}
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := tx.Bucket(bucketSandboxes).Put([]byte(r.key()), b); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *store) loadSnaps() ([]snapRecord, error) {
	var out []snapRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSnapshots)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var sr snapRecord
			if err := json.Unmarshal(v, &sr); err != nil {
				return fmt.Errorf("snapshot record %s: %w", k, err)
			}
			out = append(out, sr)
			return nil
		})
	})
	return out, err
}

// recoverSnapshots loads the snapshot records, removes what an interrupted
// snapshot or delete left behind, and marks a record whose files are gone.
func (e *Engine) recoverSnapshots() error {
	root := filepath.Join(e.cfg.StateDir, "snapshots")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(root, 0o700); err != nil { // nobody but the engine lists or reads them
		return err
	}
	srs, err := e.store.loadSnaps()
	if err != nil {
		return err
	}
	for i := range srs {
		s := srs[i]
		if _, err := os.Stat(snapFiles(e.cfg.StateDir, s.Namespace, s.Name)); err != nil && s.Message == "" {
			s.Message = "its files are missing from " + snapFiles(e.cfg.StateDir, s.Namespace, s.Name) + "; delete it"
		}
		e.snaps[s.key()] = &s
	}
	nss, _ := os.ReadDir(root)
	for _, ns := range nss {
		ents, _ := os.ReadDir(filepath.Join(root, ns.Name()))
		for _, ent := range ents {
			if strings.HasPrefix(ent.Name(), ".tmp-") || strings.HasPrefix(ent.Name(), ".deleted-") {
				_ = os.RemoveAll(filepath.Join(root, ns.Name(), ent.Name()))
			}
		}
	}
	method, owners := forkOverlay, "idmapped lower layer"
	if err := probeOverlay(root); err != nil {
		method, owners = forkCopy, "chown during the copy"
		e.log.Warn("snapshots: overlayfs with metacopy is not available on the state directory's file system; forks and restores copy the files (reflinks where the file system has them)", "err", err)
	} else if err := probeIdmap(root); err != nil {
		owners = "ownership pass (metadata copy-up per file)"
		e.log.Warn("snapshots: idmapped mounts are not available; each fork's files are chowned into its id range", "err", err)
	}
	e.forkMethod, e.forkOwners = method, owners
	e.log.Info("snapshots", "count", len(srs), "forks", method, "ownership", owners)
	return nil
}

// poolSnapshotReadyLocked says whether a pool may make members: it names
// no snapshot, or one that exists and is usable. A pool waiting for its
// snapshot says so in the log once. Callers hold e.mu.
func (e *Engine) poolSnapshotReadyLocked(p *pool) bool {
	if p.snapshot == "" {
		return true
	}
	if s := e.snaps[p.namespace+"/"+p.snapshot]; s != nil && s.Message == "" {
		p.waitLogged = false
		return true
	}
	if !p.waitLogged {
		p.waitLogged = true
		e.log.Warn("warm pool: waiting for its snapshot; members are made once it exists (SnapshotSandbox with this name)", "pool", p.namespace+"/"+p.name, "snapshot", p.snapshot)
	}
	return false
}
