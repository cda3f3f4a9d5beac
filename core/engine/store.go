package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	bucketSandboxes = []byte("sandboxes") // ns/name -> record
	bucketRequests  = []byte("requests")  // ns/request-id -> requestEntry
	bucketPools     = []byte("pools")     // ns/name -> replicas override
)

// store persists records in an embedded bbolt file: every accepted change is
// on disk before the engine answers, so a restart (or kill -9) loses nothing.
// A consistent copy of it is kept beside it as the backup (backup.go).
type store struct {
	db  *bolt.DB
	log *slog.Logger
	backups
}

// requestEntry remembers what a request id produced (AIP-155).
type requestEntry struct {
	Op      string `json:"op"`
	Sandbox string `json:"sandbox"`
	UID     string `json:"uid"`
}

// openStore opens the store of a state directory (absolute path) after
// inspecting it read-only: a fresh directory gets a new store; a damaged
// store, or one that lost the records of sandboxes whose directories exist,
// is a *StoreError and nothing is changed. On success it takes a backup and
// keeps taking them while the state changes. The report lists what was
// found, e.g. sandbox directories that no record owns.
func openStore(stateDir string, log *slog.Logger) (*store, StateReport, error) {
	rep, err := checkState(stateDir, false)
	if err != nil {
		return nil, rep, err
	}
	if err := rep.Err(); err != nil {
		return nil, rep, err
	}
	var db *bolt.DB
	err = safely(func() error {
		var err error
		db, err = bolt.Open(rep.Store, 0o600, &bolt.Options{Timeout: lockWait})
		if err != nil {
			return err
		}
		return db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketSandboxes, bucketRequests, bucketPools} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		if db != nil {
			_ = safely(db.Close)
		}
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, rep, fmt.Errorf("open state %s: it is in use (is another sandpod serve using this state directory?)", rep.Store)
		}
		var d damage
		if errors.As(err, &d) {
			rep.Problem = string(d)
			rep.Backup = inspectBackup(rep.Backup.Path)
			return nil, rep, rep.Err()
		}
		return nil, rep, fmt.Errorf("open state %s: %w", rep.Store, err)
	}
	s := &store{db: db, log: log}
	s.startBackups(filepath.Join(stateDir, backupFile), backupEvery)
	return s, rep, nil
}

// close takes a last backup if the state changed since the previous one,
// then closes the file.
func (s *store) close() error {
	s.stopBackups()
	return s.db.Close()
}

// put saves a record and, when given, the request id that produced it, in
// one transaction.
func (s *store) put(r *record, reqKey string, req *requestEntry) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		if req != nil {
			if err := putRequest(tx, reqKey, *req); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketSandboxes).Put([]byte(r.key()), b)
	})
}

// putRequest records, in tx, that the request id reqKey produced req's
// sandbox or snapshot (put, putMany, putSnap).
func putRequest(tx *bolt.Tx, reqKey string, req requestEntry) error {
	rb, _ := json.Marshal(req)
	return tx.Bucket(bucketRequests).Put([]byte(reqKey), rb)
}

// update commits fn and marks the backup out of date.
func (s *store) update(fn func(*bolt.Tx) error) error {
	if err := s.db.Update(fn); err != nil {
		return err
	}
	s.changed()
	return nil
}

// delete removes a sandbox's record and, when given, the request id entry
// that names it, in one transaction: an id names at most one live sandbox,
// and is free again once that sandbox is gone.
func (s *store) delete(key, reqKey string) error {
	return s.update(func(tx *bolt.Tx) error {
		if reqKey != "" {
			if err := tx.Bucket(bucketRequests).Delete([]byte(reqKey)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketSandboxes).Delete([]byte(key))
	})
}

func (s *store) loadAll() ([]record, map[string]requestEntry, map[string]int32, error) {
	var recs []record
	reqs := map[string]requestEntry{}
	pools := map[string]int32{}
	err := s.db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSandboxes).ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("record %s: %w", k, err)
			}
			recs = append(recs, r)
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketRequests).ForEach(func(k, v []byte) error {
			var e requestEntry
			if json.Unmarshal(v, &e) == nil {
				reqs[string(k)] = e
			}
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketPools).ForEach(func(k, v []byte) error {
			var n int32
			if json.Unmarshal(v, &n) == nil {
				pools[string(k)] = n
			}
			return nil
		})
	})
	return recs, reqs, pools, err
}

func (s *store) putPoolReplicas(key string, n int32) error {
	b, _ := json.Marshal(n)
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketPools).Put([]byte(key), b) })
}
