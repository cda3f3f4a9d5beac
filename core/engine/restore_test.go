package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestRestoreBackup(t *testing.T) {
	dir := makeStore(t, 3) // a clean stop leaves the backup equal to the store
	damageStore(t, dir, "garbage")
	damaged, _ := os.ReadFile(filepath.Join(dir, storeFile))

	r, err := RestoreBackup(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sandboxes != 3 || len(r.Orphans) != 0 || !strings.Contains(r.Aside, ".damaged-") {
		t.Errorf("restored: %+v", r)
	}
	if kept, _ := os.ReadFile(r.Aside); !bytes.Equal(kept, damaged) {
		t.Error("the damaged store was not kept aside as it was")
	}
	if fi, _ := os.Stat(r.Aside); fi.Mode().Perm() != 0o600 {
		t.Errorf("aside mode %v, want 0600 (it holds agent secrets)", fi.Mode())
	}
	st, rep, err := openStore(dir, quietLog)
	if err != nil {
		t.Fatalf("serve's open after the restore: %v", err)
	}
	st.close()
	if rep.Sandboxes != 3 {
		t.Errorf("restored store holds %d sandboxes, want 3", rep.Sandboxes)
	}

	// Now sound: a second restore would roll it back, so it needs --force.
	if _, err := RestoreBackup(dir, false); err == nil || !strings.Contains(err.Error(), "is sound (3 sandboxes)") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("restore over a sound store: %v", err)
	}
	r, err = RestoreBackup(dir, true)
	if err != nil || !strings.Contains(r.Aside, ".replaced-") {
		t.Fatalf("forced restore: %+v, %v", r, err)
	}
}

func TestRestoreReportsSandboxesNewerThanTheBackup(t *testing.T) {
	dir := makeStore(t, 2)
	old, _ := os.ReadFile(filepath.Join(dir, backupFile))
	st, _, err := openStore(dir, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.put(testRecord("default", "newer"), "", nil); err != nil {
		t.Fatal(err)
	}
	st.close()
	_ = os.MkdirAll(filepath.Join(dir, "sandboxes", "default", "newer"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, backupFile), old, 0o600); err != nil {
		t.Fatal(err)
	}
	damageStore(t, dir, "truncated")
	r, err := RestoreBackup(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sandboxes != 2 || strings.Join(r.Orphans, ",") != "default/newer" {
		t.Errorf("restored %d sandboxes, orphans %v; want 2 and default/newer", r.Sandboxes, r.Orphans)
	}
	if dirs, _ := sandboxDirs(dir); len(dirs) != 3 {
		t.Errorf("sandbox directories after restore: %v", dirs)
	}
}

func TestRestoreRefuses(t *testing.T) {
	t.Run("no backup", func(t *testing.T) {
		dir := makeStore(t, 1)
		damageStore(t, dir, "empty")
		_ = os.Remove(filepath.Join(dir, backupFile))
		_, err := RestoreBackup(dir, false)
		wantUnchanged(t, dir, err, "does not exist; nothing was changed")
	})
	t.Run("damaged backup", func(t *testing.T) {
		dir := makeStore(t, 1)
		damageStore(t, dir, "empty")
		if err := os.WriteFile(filepath.Join(dir, backupFile), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := RestoreBackup(dir, false)
		wantUnchanged(t, dir, err, "is not a bbolt database (no bbolt header in its 4 bytes); nothing was changed")
	})
	t.Run("backup from before every sandbox", func(t *testing.T) {
		dir := t.TempDir()
		st, _, err := openStore(dir, quietLog) // backup taken at open: empty
		if err != nil {
			t.Fatal(err)
		}
		st.close()
		// A sandbox made, then a kill -9 before the next backup.
		_ = os.MkdirAll(filepath.Join(dir, "sandboxes", "default", "a"), 0o755)
		damageStore(t, dir, "empty")
		_, err = RestoreBackup(dir, false)
		wantUnchanged(t, dir, err, "holds no sandbox records, while 1 sandbox directory exist, so serve would refuse it too")
	})
	t.Run("serve running", func(t *testing.T) {
		dir := makeStore(t, 1)
		db, err := bolt.Open(filepath.Join(dir, storeFile), 0o600, nil) // the exclusive lock serve holds
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		defer func(w time.Duration) { lockWait = w }(lockWait)
		lockWait = 200 * time.Millisecond
		_, err = RestoreBackup(dir, true)
		if err == nil || !strings.Contains(err.Error(), "is in use") {
			t.Fatalf("restore while serve runs: %v", err)
		}
	})
}

func wantUnchanged(t *testing.T, dir string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("restore: %v, want %q", err, want)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".damaged-") || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("a refused restore left %s", e.Name())
		}
	}
}
