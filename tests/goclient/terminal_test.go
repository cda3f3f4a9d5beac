package goclient_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// screen collects what a terminal shows and waits for a text.
type screen struct {
	t    *testing.T
	r    io.Reader
	seen strings.Builder
	got  chan string
}

func newScreen(t *testing.T, r io.Reader) *screen {
	s := &screen{t: t, r: r, got: make(chan string, 100)}
	go func() {
		defer close(s.got)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				s.got <- string(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *screen) expect(want string) {
	s.t.Helper()
	deadline := time.After(testTimeout)
	for {
		if i := strings.Index(s.seen.String(), want); i >= 0 {
			rest := s.seen.String()[i+len(want):]
			s.seen.Reset()
			s.seen.WriteString(rest)
			return
		}
		select {
		case chunk, ok := <-s.got:
			if !ok {
				s.t.Fatalf("the terminal ended before showing %q; it showed %q", want, s.seen.String())
			}
			s.seen.WriteString(chunk)
		case <-deadline:
			s.t.Fatalf("the terminal did not show %q; it showed %q", want, s.seen.String())
		}
	}
}

func TestTerminalWithPty(t *testing.T) {
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")
	ctx := testContext(t)

	p, err := sb.StartArgv(ctx, []string{"/bin/sh", "-i"}, sandpod.WithPty(24, 80))
	if err != nil {
		t.Fatal(err)
	}
	scr := newScreen(t, p.Stdout())
	type_ := func(s string) {
		t.Helper()
		if _, err := io.WriteString(p.Stdin(), s); err != nil {
			t.Fatal(err)
		}
	}
	type_("stty size\r")
	scr.expect("24 80")
	if err := p.Resize(48, 160); err != nil {
		t.Fatal(err)
	}
	type_("stty size\r")
	scr.expect("48 160")
	type_("echo abc\x7fd\r")
	scr.expect("abd\r\n")
	type_("sh -c 'echo sleep''ing; exec sleep 100'\r")
	scr.expect("sleeping\r\n")
	type_("\x03")
	type_("echo alive-$((40+2))\r")
	scr.expect("alive-42")
	type_("exit 3\r")
	res, err := p.Wait()
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("wait: %+v, %v; want exit code 3", res, err)
	}

	// A resize of a command without a terminal: the server ends the call.
	plain, err := sb.Start(ctx, "sleep 100")
	if err != nil {
		t.Fatal(err)
	}
	_ = plain.Resize(10, 10)
	if _, err := plain.Wait(); !errors.Is(err, sandpod.ErrFailedPrecondition) || !strings.Contains(err.Error(), "has no terminal") {
		t.Errorf("resize without a terminal: %v, want ErrFailedPrecondition", err)
	}
	if _, err := sb.Run(ctx, "true", sandpod.WithPty(0, 80)); !errors.Is(err, sandpod.ErrInvalidArgument) {
		t.Errorf("rows 0: %v, want ErrInvalidArgument", err)
	}
}

func TestFilesWatch(t *testing.T) {
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")
	ctx := testContext(t)
	if _, err := sb.Files().MkDir(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	w, err := sb.Files().Watch(ctx, "w", sandpod.WithRecursive())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	next := func() sandpod.FileEvent {
		t.Helper()
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	// Ready when Watch returned: this change is seen.
	if _, err := sb.Run(ctx, "mkdir w/d", sandpod.WithCheck()); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev != (sandpod.FileEvent{Type: sandpod.FileCreated, Path: "w/d", IsDir: true}) {
		t.Fatalf("event %+v, want w/d created", ev)
	}
	if _, err := sb.Run(ctx, "touch w/d/f && mv w/d/f w/g", sandpod.WithCheck()); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Type != sandpod.FileCreated || ev.Path != "w/d/f" {
		t.Fatalf("event %+v, want w/d/f created", ev)
	}
	if ev := next(); ev.Type != sandpod.FileRenamed || ev.Path != "w/g" || ev.OldPath != "w/d/f" {
		t.Fatalf("event %+v, want w/d/f renamed to w/g", ev)
	}
	w.Close()
	if _, err := w.Next(); err != io.EOF {
		t.Errorf("after Close: %v, want io.EOF", err)
	}
	if _, err := sb.Files().Watch(ctx, "missing"); !errors.Is(err, sandpod.ErrFileNotFound) {
		t.Errorf("a missing directory: %v, want ErrFileNotFound", err)
	}
}
