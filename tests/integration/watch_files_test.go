package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func eventString(e *sandpodv1.FileEvent) string {
	s := strings.TrimPrefix(e.GetType().String(), "TYPE_") + " " + e.GetPath()
	if e.GetOldPath() != "" {
		s += " <- " + e.GetOldPath()
	}
	if e.GetIsDir() {
		s += "/"
	}
	return s
}

// WatchFiles through the bridge to the agent of a real sandbox: ready
// first, then what commands in the sandbox do, recursively into a
// directory made after the watch started.
func TestWatchFiles(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "mkdir -p w")

	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	stream, err := c.WatchFiles(wctx, &sandpodv1.WatchFilesRequest{Sandbox: sb.Name, Path: "w", Recursive: true})
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
			for _, e := range m.GetEvents() {
				events <- e
			}
		}
	}()
	var got []string
	next := func(want []string) string {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the watch ended; events so far %q, want %q", got, want)
			}
			got = append(got, eventString(e))
			return got[len(got)-1]
		case <-time.After(90 * time.Second):
			t.Fatalf("no event; so far %q, want %q", got, want)
		}
		return ""
	}
	if e := next([]string{"READY w/"}); e != "READY w/" {
		t.Fatalf("first event %q, want READY w/", e)
	}
	// Each step is a command in the sandbox, as its user; an event seen
	// means the watch has acted on it.
	step := func(cmd string, want ...string) {
		t.Helper()
		sh(t, c, sb.Name, cmd)
		missing := map[string]bool{}
		for _, w := range want {
			missing[w] = true
		}
		for len(missing) > 0 {
			e := next(want)
			if !missing[e] && !seenBefore(got[:len(got)-1], e) {
				t.Fatalf("unexpected event %q; so far %q, want %q", e, got, want)
			}
			delete(missing, e)
		}
	}
	step("printf x > w/a.txt", "CREATE w/a.txt", "WRITE w/a.txt")
	step("printf y >> w/a.txt", "WRITE w/a.txt")
	step("mv w/a.txt w/b.txt", "RENAME w/b.txt <- w/a.txt")
	step("mkdir w/sub", "CREATE w/sub/")
	step("touch w/sub/new", "CREATE w/sub/new")
	step("mkdir -p w/x/y && touch w/x/y/deep", "CREATE w/x/", "CREATE w/x/y/", "CREATE w/x/y/deep")
	step("mv w/b.txt w/x/y/c.txt", "RENAME w/x/y/c.txt <- w/b.txt")
	step("rm w/x/y/c.txt", "REMOVE w/x/y/c.txt")
	step("mv w/sub moved-out", "REMOVE w/sub/") // same file system: a rename out of the watch
	// Gone from the watch: changes there are not reported any more.
	step("touch moved-out/quiet; touch w/loud", "CREATE w/loud")
	// Removing the watched directory ends the watch after its REMOVE.
	sh(t, c, sb.Name, "rm -rf w")
	for {
		e, ok := <-events
		if !ok {
			break
		}
		got = append(got, eventString(e))
	}
	if last := got[len(got)-1]; last != "REMOVE w/" {
		t.Errorf("the watch ended with %q, want REMOVE w/ (events %q)", last, got)
	}
}

func seenBefore(got []string, e string) bool {
	for _, g := range got {
		if g == e {
			return true
		}
	}
	return false
}

func TestWatchFilesErrors(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "touch plain")
	firstErr := func(req *sandpodv1.WatchFilesRequest) error {
		s, err := c.WatchFiles(ctx(t), req)
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	err := firstErr(&sandpodv1.WatchFilesRequest{Sandbox: sb.Name, Path: "no/such/dir"})
	wantCode(t, err, codes.NotFound, `"no/such/dir" does not exist`)
	if r := errinfo.Reason(err); r != errinfo.ReasonFileNotFound {
		t.Errorf("reason %q, want %s", r, errinfo.ReasonFileNotFound)
	}
	err = firstErr(&sandpodv1.WatchFilesRequest{Sandbox: sb.Name, Path: "plain"})
	wantCode(t, err, codes.InvalidArgument, "is not a directory")
	wantWhy(t, err, errinfo.ReasonNotADirectory)
	wantCode(t, firstErr(&sandpodv1.WatchFilesRequest{Sandbox: sb.Name, Path: "a/../b"}), codes.InvalidArgument, "path:")
	err = firstErr(&sandpodv1.WatchFilesRequest{Sandbox: "no-such-sandbox", Path: "."})
	wantCode(t, err, codes.NotFound, "")
	if r := errinfo.Reason(err); r != errinfo.ReasonSandboxNotFound {
		t.Errorf("reason %q, want %s", r, errinfo.ReasonSandboxNotFound)
	}

	// The limit on watches open at once in a sandbox.
	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	for i := 0; i < 16; i++ {
		s, err := c.WatchFiles(wctx, &sandpodv1.WatchFilesRequest{Sandbox: sb.Name, Path: "."})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}
	err = firstErr(&sandpodv1.WatchFilesRequest{Sandbox: sb.Name, Path: "."})
	wantCode(t, err, codes.ResourceExhausted, "16 watches open")
	wantWhy(t, err, errinfo.ReasonWatchLimit)
	cancel()
	eventually(t, "a watch possible again once the others closed", func() bool {
		return firstErr(&sandpodv1.WatchFilesRequest{Sandbox: sb.Name, Path: "."}) == nil
	})
}
