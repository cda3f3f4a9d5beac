package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func testRecord(ns, name string) *record {
	now := time.Now()
	return &record{Namespace: ns, Name: name, UID: newUID(), Secret: newSecret(), Created: now, LastActivity: now}
}

// makeStore makes a state directory with n sandbox records (and their
// directories) and closes it, as a stopped serve leaves it.
func makeStore(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	st, _, err := openStore(dir, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := testRecord("default", fmt.Sprintf("sb-%03d", i))
		r.Labels = map[string]string{"pad": strings.Repeat("x", 200)} // several pages
		if err := st.put(r, "default/req-"+r.Name, &requestEntry{Op: "claim", Sandbox: r.Name, UID: r.UID}); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "sandboxes", r.Namespace, r.Name, "work"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func storeBytes(t *testing.T, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(makeStore(t, n), storeFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckHeader(t *testing.T) {
	good := storeBytes(t, 40)
	ps := os.Getpagesize()
	if len(good) < 6*ps {
		t.Fatalf("test store is only %d bytes", len(good))
	}
	// The pages in use end at the high water mark; bbolt grows the file
	// in steps, so what lies past it is slack.
	m0, _ := parseMeta(good)
	m1, _ := parseMeta(good[ps:])
	used := int(max(m0.hwm, m1.hwm)) * ps
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	breakMeta := func(b []byte, page int) []byte { b[page*ps+boltPageHeader+60] ^= 0xff; return b }
	cases := map[string]headerCase{
		"a sound store":           {good, ""},
		"empty":                   {nil, "is empty (0 bytes)"},
		"garbage":                 {bytes.Repeat([]byte("not bbolt "), 2000), "is not a bbolt database"},
		"one byte":                {[]byte{0}, "is not a bbolt database"},
		"cut inside meta 0":       {good[:40], "is not a bbolt database"},
		"only meta 0":             {good[:ps], "is truncated"},
		"only the two metas":      {good[:2*ps], "is truncated"},
		"last used page cut":      {good[:used-ps], "is truncated"},
		"slack cut":               {good[:used], ""},
		"half":                    {good[:len(good)/2], "is truncated"},
		"meta 0 corrupt":          {with(func(b []byte) []byte { return breakMeta(b, 0) }), ""},
		"meta 1 corrupt":          {with(func(b []byte) []byte { return breakMeta(b, 1) }), ""},
		"both metas corrupt":      {with(func(b []byte) []byte { return breakMeta(breakMeta(b, 0), 1) }), "has no valid bbolt meta page"},
		"meta pages zeroed":       {with(func(b []byte) []byte { clear(b[:2*ps]); return b }), "is not a bbolt database"},
		"grown with zeros at end": {append(bytes.Clone(good), make([]byte, 3*ps)...), ""},
	}
	runHeaderCases(t, cases)
}

func TestJudgeStore(t *testing.T) {
	recs := []record{*testRecord("default", "a")}
	dirs := []string{"default/a"}
	cases := map[string]struct {
		facts   storeFacts
		dirs    []string
		backup  bool
		fresh   bool
		problem string // substring; "" means serve starts
	}{
		"fresh state dir":                  {storeFacts{}, nil, false, true, ""},
		"store missing, sandbox dirs":      {storeFacts{}, dirs, false, false, "is missing, while 1 sandbox directory exist"},
		"store missing, a backup":          {storeFacts{}, nil, true, false, "is missing, while a backup of it exists"},
		"damaged":                          {storeFacts{exists: true, damage: "is empty (0 bytes)"}, nil, true, false, "is empty (0 bytes)"},
		"damaged, no dirs, no backup":      {storeFacts{exists: true, damage: "is truncated"}, nil, false, false, "is truncated"},
		"no buckets yet, nothing else":     {storeFacts{exists: true}, nil, false, false, ""},
		"no sandboxes bucket, dirs":        {storeFacts{exists: true}, dirs, false, false, "has no sandboxes bucket, while 1 sandbox directory exist"},
		"no sandboxes bucket, request ids": {storeFacts{exists: true, requests: 3}, nil, false, false, "it holds 3 request ids"},
		"bucket empty, dirs":               {storeFacts{exists: true, hasSandboxes: true}, []string{"default/a", "team/b"}, true, false, "holds no sandbox records, while 2 sandbox directories exist"},
		"bucket empty, no dirs":            {storeFacts{exists: true, hasSandboxes: true}, nil, true, false, ""},
		"records and their dirs":           {storeFacts{exists: true, hasSandboxes: true, records: recs}, dirs, true, false, ""},
		"records, more dirs (orphans)":     {storeFacts{exists: true, hasSandboxes: true, records: recs}, []string{"default/a", "default/z"}, true, false, ""},
		"records, no dirs (pending start)": {storeFacts{exists: true, hasSandboxes: true, records: recs}, nil, false, false, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fresh, problem := judgeStore(tc.facts, tc.dirs, tc.backup)
			if fresh != tc.fresh {
				t.Errorf("fresh = %v, want %v", fresh, tc.fresh)
			}
			if (tc.problem == "") != (problem == "") || !strings.Contains(problem, tc.problem) {
				t.Errorf("problem = %q, want %q", problem, tc.problem)
			}
		})
	}
}

func TestOrphanDirs(t *testing.T) {
	f := storeFacts{records: []record{*testRecord("default", "a"), *testRecord("team", "b")}}
	got := orphanDirs(f, []string{"team/b", "default/z", "default/a", "default/c"})
	if strings.Join(got, ",") != "default/c,default/z" {
		t.Fatalf("orphanDirs = %v", got)
	}
}

func TestStaleSocket(t *testing.T) {
	refused := &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
	cases := map[string]struct {
		known, isSocket bool
		dialErr         error
		want            bool
	}{
		"unknown, nobody listens":          {false, true, refused, true},
		"unknown, a live agent listens":    {false, true, nil, false},
		"unknown, no answer in time":       {false, true, errors.New("i/o timeout"), false},
		"unknown, backlog full":            {false, true, syscall.EAGAIN, false},
		"known, nobody listens":            {true, true, refused, false},
		"known, listening":                 {true, true, nil, false},
		"not a socket":                     {false, false, refused, false},
		"unknown, permission denied":       {false, true, syscall.EACCES, false},
		"unknown, vanished while sweeping": {false, true, syscall.ENOENT, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := staleSocket(tc.known, tc.isSocket, tc.dialErr); got != tc.want {
				t.Errorf("staleSocket(%v, %v, %v) = %v, want %v", tc.known, tc.isSocket, tc.dialErr, got, tc.want)
			}
		})
	}
}

func TestStoreErrorMessage(t *testing.T) {
	base := StoreError{Path: "/s/state.db", Problem: "is empty (0 bytes)", StateDir: "/s", Dirs: 2}
	withBackup := base
	withBackup.Backup = BackupInfo{Path: "/s/state.db.bak", Exists: true, Taken: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Sandboxes: 2}
	noBackup := base
	noBackup.Backup = BackupInfo{Path: "/s/state.db.bak"}
	badBackup := base
	badBackup.Backup = BackupInfo{Path: "/s/state.db.bak", Exists: true, Problem: "is truncated: 10 bytes"}
	spaced := base
	spaced.StateDir = "/my state"
	cases := map[string]struct {
		err          StoreError
		want, absent []string
	}{
		"usable backup": {withBackup, []string{
			"the state store /s/state.db is empty (0 bytes).",
			"the 2 sandbox directories under /s/sandboxes are kept",
			"backup /s/state.db.bak (written 2025-01-02 03:04:05 UTC, 2 sandboxes)",
			"sandpod state restore --state-dir /s\n",
			"sandpod purge --state-dir /s && mv /s /s.old",
		}, nil},
		"no backup": {noBackup, []string{
			"no usable backup: /s/state.db.bak does not exist",
			"mv /s /s.old",
		}, []string{"state restore"}},
		"damaged backup": {badBackup, []string{"no usable backup: /s/state.db.bak is truncated: 10 bytes"}, []string{"state restore"}},
		"path to quote":  {spaced, []string{"--state-dir '/my state' && mv '/my state' '/my state.old'"}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg := tc.err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(msg, a) {
					t.Errorf("message has %q:\n%s", a, msg)
				}
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/sandpod": "/var/lib/sandpod",
		"/a b":             "'/a b'",
		"/it's":            `'/it'\''s'`,
		"":                 "''",
		"/x;rm -rf /":      "'/x;rm -rf /'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// headerCase is a store file and what checkHeader must say of it: a
// substring of its error, or "" for sound.
type headerCase struct {
	file []byte
	want string
}

func runHeaderCases(t *testing.T, cases map[string]headerCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := checkHeader(bytes.NewReader(tc.file), int64(len(tc.file)))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("checkHeader: %v, want sound", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("checkHeader: %v, want %q", err, tc.want)
			}
		})
	}
}
