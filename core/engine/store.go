package engine

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketSandboxes = []byte("sandboxes") // ns/name -> record
	bucketRequests  = []byte("requests")  // ns/request-id -> requestEntry
	bucketPools     = []byte("pools")     // ns/name -> replicas override
)

// store persists records in an embedded bbolt file: every accepted change is
// on disk before the engine answers, so a restart (or kill -9) loses nothing.
type store struct{ db *bolt.DB }

// requestEntry remembers what a request id produced (AIP-155).
type requestEntry struct {
	Op      string `json:"op"`
	Sandbox string `json:"sandbox"`
	UID     string `json:"uid"`
}

func openStore(path string) (*store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open state %s (is another sandpod serve using it?): %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSandboxes, bucketRequests, bucketPools} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &store{db: db}, nil
}

func (s *store) close() error { return s.db.Close() }

// put saves a record and, when given, the request id that produced it, in
// one transaction.
func (s *store) put(r *record, reqKey string, req *requestEntry) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if req != nil {
			rb, _ := json.Marshal(req)
			if err := tx.Bucket(bucketRequests).Put([]byte(reqKey), rb); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketSandboxes).Put([]byte(r.key()), b)
	})
}

func (s *store) delete(key string) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSandboxes).Delete([]byte(key)) })
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
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketPools).Put([]byte(key), b) })
}
