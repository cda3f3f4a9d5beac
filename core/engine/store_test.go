package engine

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// damageStore changes a stopped state directory's store in one of the ways
// a disk, a crash or a person does.
func damageStore(t *testing.T, dir, how string) {
	t.Helper()
	path := filepath.Join(dir, storeFile)
	b, err := os.ReadFile(path)
	if err != nil && how != "remove" {
		t.Fatal(err)
	}
	switch how {
	case "empty":
		b = nil
	case "garbage":
		b = bytes.Repeat([]byte("garbage!"), 4096)
	case "truncated":
		b = b[:2*os.Getpagesize()+100]
	case "remove":
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		return
	case "no sandboxes bucket", "no records":
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bucketSandboxes); err != nil || how == "no sandboxes bucket" {
				return err
			}
			_, err := tx.CreateBucket(bucketSandboxes)
			return err
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	case "bad record", "short uid":
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := []byte("{not json")
		if how == "short uid" {
			v = []byte(`{"namespace":"default","name":"sb-000","uid":"abc"}`)
		}
		err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSandboxes).Put([]byte("default/sb-000"), v) })
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	default:
		t.Fatalf("unknown damage %q", how)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenStoreRefusesDamage(t *testing.T) {
	cases := map[string]string{
		"empty":               "is empty (0 bytes)",
		"garbage":             "is not a bbolt database",
		"truncated":           "is truncated",
		"remove":              "is missing, while 3 sandbox directories exist",
		"no sandboxes bucket": "has no sandboxes bucket, while 3 sandbox directories exist",
		"no records":          "holds no sandbox records, while 3 sandbox directories exist",
		"bad record":          "holds a sandbox record that does not decode",
		"short uid":           "holds a sandbox record that does not match its key",
	}
	for how, want := range cases {
		t.Run(how, func(t *testing.T) {
			dir := makeStore(t, 3)
			damageStore(t, dir, how)
			before, _ := os.ReadFile(filepath.Join(dir, storeFile))
			st, _, err := openStore(dir, quietLog)
			if err == nil {
				st.close()
				t.Fatal("openStore accepted a damaged store")
			}
			var se *StoreError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T), want a *StoreError", err, err)
			}
			msg := se.Error()
			for _, w := range []string{filepath.Join(dir, storeFile) + " " + want, "sandpod state restore --state-dir " + dir} {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			after, _ := os.ReadFile(filepath.Join(dir, storeFile))
			if !bytes.Equal(before, after) {
				t.Error("the refused store was changed")
			}
			if dirs, _ := sandboxDirs(dir); len(dirs) != 3 {
				t.Errorf("sandbox directories = %v, want 3", dirs)
			}
		})
	}
}

func TestOpenStoreFreshAndSound(t *testing.T) {
	dir := t.TempDir()
	st, rep, err := openStore(dir, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Fresh {
		t.Error("a new state directory is not reported fresh")
	}
	if err := st.put(testRecord("default", "a"), "", nil); err != nil {
		t.Fatal(err)
	}
	st.close()
	if err := os.MkdirAll(filepath.Join(dir, "sandboxes", "default", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sandboxes", "default", "later"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, rep, err = openStore(dir, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if rep.Fresh || rep.Sandboxes != 1 || strings.Join(rep.Orphans, ",") != "default/later" {
		t.Errorf("report: fresh %v, %d sandboxes, orphans %v", rep.Fresh, rep.Sandboxes, rep.Orphans)
	}
}

// TestInspectNeverPanics damages a real store at random places, the way a
// bad disk does; inspecting must say "damaged" or "sound", never crash. A
// fault that escaped would kill this test binary. Under -race, build bbolt
// without checkptr as the Makefile does (RACEFLAGS): checkptr throws on the
// wild pointers a damaged file gives bbolt, before any fault happens.
func TestInspectNeverPanics(t *testing.T) {
	good := storeBytes(t, 60)
	ps := os.Getpagesize()
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	path := filepath.Join(dir, storeFile)
	damaged := 0
	for i := 0; i < 300; i++ {
		b := bytes.Clone(good)
		switch i % 4 {
		case 0: // a page of zeros
			clear(b[rng.Intn(len(b)/ps)*ps:][:ps])
		case 1: // a page of noise
			rng.Read(b[rng.Intn(len(b)/ps)*ps:][:ps])
		case 2: // a few flipped bytes anywhere after the metas
			for j := 0; j < 8; j++ {
				b[2*ps+rng.Intn(len(b)-2*ps)] ^= byte(1 + rng.Intn(255))
			}
		case 3: // page headers (id, flags, count, overflow) scrambled
			p := 2 + rng.Intn(len(b)/ps-2)
			rng.Read(b[p*ps:][:boltPageHeader])
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := inspectStore(path, time.Second)
		if err != nil {
			t.Fatalf("variant %d: %v", i, err)
		}
		if f.damage != "" {
			damaged++
			continue
		}
		// Passed: then the engine's own path (open for writing, load,
		// write) must work on it too.
		st, _, err := openStore(dir, quietLog)
		if err != nil {
			t.Fatalf("variant %d passed inspection, then: %v", i, err)
		}
		if _, _, _, err := st.loadAll(); err != nil {
			t.Errorf("variant %d passed inspection, then loadAll: %v", i, err)
		}
		if err := st.put(testRecord("default", "new"), "", nil); err != nil {
			t.Errorf("variant %d passed inspection, then put: %v", i, err)
		}
		st.close()
	}
	// The rest changed bytes that bbolt cannot tell from data (inside
	// values, or past the last page in use).
	t.Logf("%d of 300 variants found damaged", damaged)
	if damaged == 0 {
		t.Fatal("no damage found in any variant")
	}
}

func TestBackupFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	st, _, err := openStore(dir, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	st.stopBackups() // restart the loop with a short period
	st.startBackups(filepath.Join(dir, backupFile), 50*time.Millisecond)
	bak := filepath.Join(dir, backupFile)
	if b := inspectBackup(bak); !b.Usable() || b.Sandboxes != 0 {
		t.Fatalf("backup at open: %s", b)
	}
	for _, n := range []string{"a", "b", "c"} {
		if err := st.put(testRecord("default", n), "", nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for inspectBackup(bak).Sandboxes != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("backup never caught up: %s", inspectBackup(bak))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The last change before a clean stop is in the backup even when the
	// period has not passed (the loop restarted with a period of an hour:
	// not set under it, which the loop reads).
	st.stopBackups()
	st.startBackups(bak, time.Hour)
	if err := st.delete("default/a", ""); err != nil {
		t.Fatal(err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if b := inspectBackup(bak); b.Sandboxes != 2 {
		t.Fatalf("backup after close: %s, want 2 sandboxes", b)
	}
	if fi, err := os.Stat(bak); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup mode: %v %v, want 0600", fi.Mode(), err)
	}
	if _, err := os.Stat(bak + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary backup file left: %v", err)
	}
}

// TestPurgeWorksOnADamagedStore: the refusal tells the user to purge before
// moving a damaged state directory aside, so purge must not need the store.
func TestPurgeWorksOnADamagedStore(t *testing.T) {
	dir := makeStore(t, 2)
	damageStore(t, dir, "truncated")
	before, _ := os.ReadFile(filepath.Join(dir, storeFile))
	if _, err := Purge(dir); err != nil {
		t.Fatalf("purge on a damaged store: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, storeFile)); !bytes.Equal(before, after) {
		t.Error("purge changed the damaged store")
	}
}

// Each way of saving a record with the request id that made it (a create, a
// fork, a snapshot) keeps that id, read back as a restarted serve reads it:
// a retried request finds what it made.
func TestStoreKeepsRequestIDs(t *testing.T) {
	st, _, err := openStore(t.TempDir(), quietLog)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	want := map[string]requestEntry{
		"default/create": {Op: "create", Sandbox: "a", UID: "u1"},
		"default/fork":   {Op: "fork", Sandbox: "b", UID: "u2"},
		"default/snap":   {Op: "snapshot", Sandbox: "s", UID: "u3"},
	}
	create, fork, snap := want["default/create"], want["default/fork"], want["default/snap"]
	if err := st.put(testRecord("default", "a"), "default/create", &create); err != nil {
		t.Fatal(err)
	}
	if err := st.putMany([]*record{testRecord("default", "b")}, map[string]requestEntry{"default/fork": fork}); err != nil {
		t.Fatal(err)
	}
	if err := st.putSnap(&snapRecord{Namespace: "default", Name: "s", UID: "u3"}, "default/snap", &snap); err != nil {
		t.Fatal(err)
	}
	if err := st.put(testRecord("default", "c"), "default/none", nil); err != nil {
		t.Fatal(err)
	}
	recs, reqs, _, err := st.loadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Errorf("%d sandbox records, want 3", len(recs))
	}
	if !reflect.DeepEqual(reqs, want) {
		t.Errorf("request ids:\n got %v\nwant %v", reqs, want)
	}
}
