package integration

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/engine"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// storeConfig is a template without a pool: the state holds only what a
// test makes, and a serve that wrongly starts makes nothing.
var storeConfig = testserver.PythonTemplate

// sandpod runs the real binary to its end and returns its exit code and
// everything it printed.
func sandpod(t *testing.T, args ...string) (int, string) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(c, testserver.Binary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee) && c.Err() == nil:
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("sandpod %s: %v\n%s", strings.Join(args, " "), err, out)
	return 0, ""
}

// serveRefuses starts `sandpod serve` on dir and wants it to exit non-zero
// at once; it returns what serve printed.
func serveRefuses(t *testing.T, dir string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(storeConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := sandpod(t, "serve", "--listen", "127.0.0.1:0", "--state-dir", dir, "--config", cfg)
	if code == 0 {
		t.Fatalf("serve started on a damaged store (exit 0):\n%s", out)
	}
	return out
}

// tree lists every path under dir with its size: what a refused start
// must leave as it was.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(p + " " + info.Mode().String())
		if info.Mode().IsRegular() {
			b.WriteString(" " + strconv.FormatInt(info.Size(), 10))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dropSandboxesBucket is a store that lost its records: still a sound
// bbolt file, with no sandboxes bucket.
func dropSandboxesBucket(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("sandboxes")) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// claimWithFile claims a sandbox and writes a file into it.
func claimWithFile(t *testing.T, c sandpodv1.SandboxServiceClient, content string) *sandpodv1.Sandbox {
	t.Helper()
	sb, _ := claim(t, c, "python")
	if err := writeFile(t, c, sb.Name, "kept.txt", []byte(content)); err != nil {
		t.Fatalf("write a file into %s: %v", sb.Name, err)
	}
	return sb
}

func wantFile(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, want string) {
	t.Helper()
	eventually(t, sandbox+" running again", func() bool {
		sb, err := getSandbox(t, c, sandbox)
		return err == nil && sb.GetPhase() == sandpodv1.Phase_PHASE_RUNNING
	})
	got, err := readFile(t, c, sandbox, "kept.txt")
	if err != nil || string(got) != want {
		t.Fatalf("kept.txt in %s = %q, %v; want %q", sandbox, got, err, want)
	}
	if r := sh(t, c, sandbox, "echo alive"); r.stdout != "alive\n" {
		t.Fatalf("exec in %s: %+v", sandbox, r)
	}
}

// TestStoreDamageRefusesToStart: on an empty, garbage, truncated or
// record-less store, or none while sandbox directories exist, serve exits
// non-zero with one message naming the file and the way back, and changes
// nothing. With the store put back, the sandbox is there.
func TestStoreDamageRefusesToStart(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: storeConfig})
	c := srv.Client()
	sb := claimWithFile(t, c, "still here")
	srv.Stop(t)

	dir := srv.StateDir()
	store := filepath.Join(dir, "state.db")
	good, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	sandboxes := tree(t, filepath.Join(dir, "sandboxes"))
	cases := []struct {
		name, want string
		damage     func()
	}{
		{"empty", "is empty (0 bytes)", func() { write(t, store, nil) }},
		{"garbage", "is not a bbolt database", func() { write(t, store, bytes.Repeat([]byte("garbage "), 5000)) }},
		{"truncated", "is truncated", func() { write(t, store, good[:len(good)/3]) }},
		{"no records", "has no sandboxes bucket, while 1 sandbox directory exist", func() { dropSandboxesBucket(t, store) }},
		{"no store", "is missing, while 1 sandbox directory exist", func() { _ = os.Remove(store) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.damage()
			damaged, _ := os.ReadFile(store)
			out := serveRefuses(t, dir)
			for _, w := range []string{
				"refusing to start: the state store " + store + " " + tc.want,
				"Nothing was changed or deleted",
				"sandpod state restore --state-dir " + dir + "\n",
				"sandpod purge --state-dir " + dir + " && mv " + dir + " " + dir + ".old",
			} {
				if !strings.Contains(out, w) {
					t.Errorf("serve's message lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
				t.Errorf("serve panicked:\n%s", out)
			}
			if after, _ := os.ReadFile(store); !bytes.Equal(after, damaged) {
				t.Error("serve changed the damaged store")
			}
			if got := tree(t, filepath.Join(dir, "sandboxes")); got != sandboxes {
				t.Errorf("sandbox directories changed:\nbefore\n%s\nafter\n%s", sandboxes, got)
			}
			write(t, store, good)
		})
	}
	srv.StartAgain(t)
	wantFile(t, c, sb.Name, "still here")
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

var asideRE = regexp.MustCompile(`kept at (\S+state\.db\.damaged-\S+)`)

// TestStoreRestoreFromBackup: serve is killed (no clean stop), its store
// is damaged; the backup it kept while running brings the sandbox and its
// file back through `sandpod state restore`.
func TestStoreRestoreFromBackup(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: storeConfig})
	c := srv.Client()
	sb := claimWithFile(t, c, "from the backup")
	dir := srv.StateDir()
	backup := filepath.Join(dir, "state.db.bak")
	// The backup follows the changes while serve runs (at most every 5 s).
	eventually(t, "the backup to hold the claimed sandbox", func() bool { return backupHolds(backup, sb.Name) })
	srv.Kill(t)

	garbage := bytes.Repeat([]byte{0xde, 0xad}, 8192)
	write(t, filepath.Join(dir, "state.db"), garbage)
	serveRefuses(t, dir)

	code, out := sandpod(t, "state", "check", "--state-dir", dir)
	if code != 1 || !strings.Contains(out, "UNUSABLE: is not a bbolt database") || !strings.Contains(out, "1 sandboxes)") {
		t.Fatalf("state check: exit %d\n%s", code, out)
	}
	code, out = sandpod(t, "state", "restore", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "restored "+filepath.Join(dir, "state.db")) {
		t.Fatalf("state restore: exit %d\n%s", code, out)
	}
	m := asideRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("state restore does not say where the damaged store is:\n%s", out)
	}
	if kept, _ := os.ReadFile(m[1]); !bytes.Equal(kept, garbage) {
		t.Errorf("the damaged store was not kept as it was at %s", m[1])
	}
	if code, out := sandpod(t, "state", "restore", "--state-dir", dir); code == 0 || !strings.Contains(out, "--force") {
		t.Errorf("a second restore over the now sound store: exit %d\n%s", code, out)
	}

	srv.StartAgain(t)
	wantFile(t, c, sb.Name, "from the backup")
}

// TestStoreRestoreFromOlderBackupKeepsLiveSandboxes: a backup older than a
// sandbox restores the others; the newer one keeps its directory, its
// running agent keeps its socket (never swept), and its name is not given
// out again.
func TestStoreRestoreFromOlderBackupKeepsLiveSandboxes(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: storeConfig})
	c := srv.Client()
	old := claimWithFile(t, c, "old")
	srv.Stop(t)
	dir := srv.StateDir()
	backup := filepath.Join(dir, "state.db.bak")
	olderBackup, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}

	srv.StartAgain(t)
	newer := claimWithFile(t, c, "newer")
	srv.Stop(t)
	sockDir, err := engine.SocketDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(sockDir, newer.Uid[:16]+".sock")
	wantListening(t, socket)

	write(t, backup, olderBackup)
	write(t, filepath.Join(dir, "state.db"), nil)
	code, out := sandpod(t, "state", "restore", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "no record in the backup (made after it was taken): default/"+newer.Name) {
		t.Fatalf("state restore: exit %d\n%s", code, out)
	}

	srv.StartAgain(t)
	wantFile(t, c, old.Name, "old")
	if !strings.Contains(srv.Log(), "default/"+newer.Name) {
		t.Errorf("serve does not report the directory without a record:\n%s", srv.Log())
	}
	wantListening(t, socket)
	if _, err := os.Stat(filepath.Join(dir, "sandboxes", "default", newer.Name)); err != nil {
		t.Errorf("the newer sandbox's directory: %v", err)
	}
	_, err = c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "python", Name: newer.Name})
	wantCode(t, err, codes.AlreadyExists, "exists without a record")
	wantWhy(t, err, errinfo.ReasonSandboxExists)
	// The newer sandbox's processes are left for the cleanup's purge.
}

func wantListening(t *testing.T, socket string) {
	t.Helper()
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		t.Fatalf("agent socket %s: %v", socket, err)
	}
	conn.Close()
}

// backupHolds reads a backup the way an operator would, read-only.
func backupHolds(path, name string) bool {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return false
	}
	defer db.Close()
	found := false
	_ = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("sandboxes")); b != nil {
			found = b.Get([]byte("default/"+name)) != nil
		}
		return nil
	})
	return found
}
