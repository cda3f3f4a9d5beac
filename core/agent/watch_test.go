package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

type fakeActions struct{ added, dropped []string }

func (f *fakeActions) addTree(d string)  { f.added = append(f.added, d) }
func (f *fakeActions) dropTree(d string) { f.dropped = append(f.dropped, d) }

func evString(evs []*sandpodv1.FileEvent) string {
	var parts []string
	for _, e := range evs {
		s := strings.TrimPrefix(e.Type.String(), "TYPE_") + " " + e.Path
		if e.OldPath != "" {
			s += " <- " + e.OldPath
		}
		if e.IsDir {
			s += "/"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func TestWatchTree(t *testing.T) {
	const (
		create = unix.IN_CREATE
		modify = unix.IN_MODIFY
		del    = unix.IN_DELETE
		from   = unix.IN_MOVED_FROM
		to     = unix.IN_MOVED_TO
		dir    = unix.IN_ISDIR
	)
	for _, tc := range []struct {
		name      string
		recursive bool
		events    []rawEvent
		flush     bool
		want      string
		added     string
		dropped   string
	}{
		{name: "create write remove", events: []rawEvent{{1, create, 0, "a"}, {1, modify, 0, "a"}, {1, modify, 0, "a"}, {1, del, 0, "a"}},
			want: "CREATE /w/a; WRITE /w/a; REMOVE /w/a"},
		{name: "writes coalesce until another event", events: []rawEvent{{1, modify, 0, "a"}, {1, modify, 0, "b"}, {1, modify, 0, "a"}, {1, create, 0, "a"}, {1, modify, 0, "a"}},
			want: "WRITE /w/a; WRITE /w/b; CREATE /w/a; WRITE /w/a"},
		{name: "rename pairs by cookie", events: []rawEvent{{1, from, 7, "a"}, {1, to, 7, "b"}},
			want: "RENAME /w/b <- /w/a"},
		{name: "moved in is a create, new dir watched", recursive: true, events: []rawEvent{{1, to | dir, 9, "d"}},
			want: "CREATE /w/d/", added: "/w/d"},
		{name: "moved out is a remove, its watches dropped", events: []rawEvent{{1, from | dir, 5, "d"}}, flush: true,
			want: "REMOVE /w/d/", dropped: "/w/d"},
		{name: "new dir not watched without recursive", events: []rawEvent{{1, create | dir, 0, "d"}},
			want: "CREATE /w/d/"},
		{name: "events under a subdirectory", recursive: true, events: []rawEvent{{2, create, 0, "f"}},
			want: "CREATE /w/sub/f"},
		{name: "root removed ends", events: []rawEvent{{1, unix.IN_DELETE_SELF, 0, ""}, {1, unix.IN_IGNORED, 0, ""}},
			want: "REMOVE /w/"},
		{name: "subdir removal reported once, by its parent", events: []rawEvent{{2, unix.IN_DELETE_SELF, 0, ""}, {1, del | dir, 0, "sub"}, {2, unix.IN_IGNORED, 0, ""}, {2, create, 0, "late"}},
			want: "REMOVE /w/sub/"},
		{name: "overflow", events: []rawEvent{{-1, unix.IN_Q_OVERFLOW, 0, ""}},
			want: "OVERFLOW /w/"},
		{name: "the files API's write shows as its target made and written", events: []rawEvent{
			{1, create, 0, ".a.txt.sandpod-0123456789ab"}, {1, modify, 0, ".a.txt.sandpod-0123456789ab"},
			{1, from, 3, ".a.txt.sandpod-0123456789ab"}, {1, to, 3, "a.txt"}},
			want: "CREATE /w/a.txt; WRITE /w/a.txt"},
		{name: "a name like a temporary one, but not one, is shown", events: []rawEvent{{1, create, 0, ".a.sandpod-0123456789aZ"}},
			want: "CREATE /w/.a.sandpod-0123456789aZ"},
		{name: "unknown watch ignored", events: []rawEvent{{42, create, 0, "x"}}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWatchTree("/w", tc.recursive)
			tr.paths[1] = "/w"
			tr.paths[2] = "/w/sub"
			fa := &fakeActions{}
			for _, ev := range tc.events {
				tr.handle(ev, fa)
			}
			if tc.flush {
				tr.flushMoves(fa)
			}
			if got := evString(tr.take()); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			if got := strings.Join(fa.added, ","); got != tc.added {
				t.Errorf("added %q, want %q", got, tc.added)
			}
			if got := strings.Join(fa.dropped, ","); got != tc.dropped {
				t.Errorf("dropped %q, want %q", got, tc.dropped)
			}
		})
	}
}

func TestWatchTreeRenameDirMovesWatches(t *testing.T) {
	tr := newWatchTree("/w", true)
	tr.paths[1], tr.paths[2], tr.paths[3], tr.paths[4] = "/w", "/w/a", "/w/a/b", "/w/ab"
	tr.handle(rawEvent{1, unix.IN_MOVED_FROM | unix.IN_ISDIR, 3, "a"}, &fakeActions{})
	tr.handle(rawEvent{1, unix.IN_MOVED_TO | unix.IN_ISDIR, 3, "z"}, &fakeActions{})
	tr.handle(rawEvent{3, unix.IN_CREATE, 0, "f"}, &fakeActions{})
	if got := evString(tr.take()); got != "RENAME /w/z <- /w/a/; CREATE /w/z/b/f" {
		t.Errorf("events %q", got)
	}
	if tr.paths[4] != "/w/ab" {
		t.Errorf("a sibling with the same prefix moved: %q", tr.paths[4])
	}
}

// WatchFiles over the agent: ready first, then changes, recursive into a
// directory made after the watch started.
func TestWatchFilesAgent(t *testing.T) {
	client, ctx, srv := startAgent(t)
	root := srv.cfg.Root
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.WatchFiles(ctx, &sandpodv1.WatchFilesRequest{Path: "d", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan *sandpodv1.FileEvent, 1000)
	go func() {
		defer close(events)
		for {
			m, err := stream.Recv()
			if err != nil {
				return
			}
			for _, e := range m.Events {
				events <- e
			}
		}
	}()
	var got []string
	next := func(what string) *sandpodv1.FileEvent {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("stream ended waiting for %s", what)
			}
			return e
		case <-time.After(30 * time.Second):
			t.Fatalf("no event for %s (so far: %q)", what, got)
		}
		return nil
	}
	if e := next("ready"); e.Type != sandpodv1.FileEvent_TYPE_READY || e.Path != "d" {
		t.Fatalf("first event %v, want READY d", e)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Step by step: an event seen means the watch has acted on it (a new
	// directory's watch is in place before its CREATE is sent).
	step := func(do func() error, want ...string) {
		t.Helper()
		must(do())
		// A tree made at once may be reported twice (scan and watch): an
		// event already seen may come again, but nothing else may.
		missing := map[string]bool{}
		for _, w := range want {
			missing[w] = true
		}
		for len(missing) > 0 {
			e := evString([]*sandpodv1.FileEvent{next(fmt.Sprint(want))})
			got = append(got, e)
			if !missing[e] && !slices.Contains(got[:len(got)-1], e) {
				t.Fatalf("events %q, want %q", got, want)
			}
			delete(missing, e)
		}
	}
	step(func() error { return os.WriteFile(filepath.Join(root, "d/f"), []byte("x"), 0o644) }, "CREATE d/f", "WRITE d/f")
	step(func() error { return os.Mkdir(filepath.Join(root, "d/sub"), 0o755) }, "CREATE d/sub/")
	step(func() error { return os.WriteFile(filepath.Join(root, "d/sub/g"), nil, 0o644) }, "CREATE d/sub/g")
	step(func() error { return os.Rename(filepath.Join(root, "d/f"), filepath.Join(root, "d/sub/h")) }, "RENAME d/sub/h <- d/f")
	step(func() error { return os.Remove(filepath.Join(root, "d/sub/h")) }, "REMOVE d/sub/h")
	// A tree made at once, before its first directory's watch can be added:
	// the scan reports what it holds.
	step(func() error {
		if err := os.MkdirAll(filepath.Join(root, "d/n1/n2"), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, "d/n1/n2/deep"), nil, 0o644)
	}, "CREATE d/n1/", "CREATE d/n1/n2/", "CREATE d/n1/n2/deep")
	step(func() error { return os.WriteFile(filepath.Join(root, "d/n1/n2/late"), nil, 0o644) }, "CREATE d/n1/n2/late")
	cancel()
	for range events {
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.watchStreams.Load() != 0 || srv.watchDirs.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the watch ended: %d streams, %d dirs still counted", srv.watchStreams.Load(), srv.watchDirs.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchFilesErrorsAgent(t *testing.T) {
	client, ctx, srv := startAgent(t)
	if err := os.WriteFile(filepath.Join(srv.cfg.Root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	recvErr := func(p string) error {
		s, err := client.WatchFiles(ctx, &sandpodv1.WatchFilesRequest{Path: p})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	if err := recvErr("missing"); status.Code(err) != codes.NotFound || errinfo.Reason(err) != errinfo.ReasonFileNotFound {
		t.Errorf("missing dir: %v, want NOT_FOUND FILE_NOT_FOUND", err)
	}
	if err := recvErr("file"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a file: %v, want INVALID_ARGUMENT", err)
	}
	if err := recvErr("../x"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("..: %v, want INVALID_ARGUMENT", err)
	}
}

func TestIsTempName(t *testing.T) {
	for _, base := range []string{"a", "a.txt", strings.Repeat("x", MaxNameLen)} {
		if n := tempName(base); !isTempName(n) {
			t.Errorf("isTempName(%q) = false for a name tempName made", n)
		}
	}
	for _, n := range []string{"a.sandpod-0123456789ab", ".sandpod-0123456789ab", ".a.sandpod-0123456789AB", ".a.sandpod-0123456789a", ".a.sandpod_0123456789ab"} {
		if isTempName(n) {
			t.Errorf("isTempName(%q) = true", n)
		}
	}
}

// A tree moved into a watch is reported entry by entry up to a cap, then
// with one OVERFLOW: what the agent holds for a client stays bounded.
func TestWatchFilesCapsATreeMovedIn(t *testing.T) {
	saved := maxSyntheticCreates
	maxSyntheticCreates = 5
	t.Cleanup(func() { maxSyntheticCreates = saved })
	client, ctx, srv := startAgent(t)
	root := srv.cfg.Root
	for _, d := range []string{"w", "outside/tree"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ {
		if err := os.WriteFile(filepath.Join(root, "outside/tree", fmt.Sprint("f", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.WatchFiles(ctx, &sandpodv1.WatchFilesRequest{Path: "w", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := stream.Recv(); err != nil || m.Events[0].Type != sandpodv1.FileEvent_TYPE_READY {
		t.Fatalf("ready: %v %v", m, err)
	}
	if err := os.Rename(filepath.Join(root, "outside/tree"), filepath.Join(root, "w/tree")); err != nil {
		t.Fatal(err)
	}
	var got []*sandpodv1.FileEvent
	for len(got) < 7 {
		m, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Events...)
	}
	if s := evString(got[:1]); s != "CREATE w/tree/" {
		t.Errorf("first %q, want the tree's CREATE", s)
	}
	for _, e := range got[1:6] {
		if e.Type != sandpodv1.FileEvent_TYPE_CREATE {
			t.Errorf("%q: want 5 CREATEs of what it held", evString(got))
		}
	}
	if s := evString(got[6:7]); s != "OVERFLOW w/" || len(got) != 7 {
		t.Errorf("events %q, want 5 CREATEs then one OVERFLOW w/", evString(got))
	}
}
