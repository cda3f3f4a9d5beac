package e2e

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// TestBridgeTerminalAndWatchFiles: through the in-cluster bridge to the
// agent of a real pod, under runc and under gVisor: a shell on a terminal
// of the pod (its size, a resize, line editing, Ctrl-C, the exit code),
// and a recursive file watch (ready, create, rename, a new directory).
func TestBridgeTerminalAndWatchFiles(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	for _, runtime := range []string{"", GVisor} {
		name := "runc"
		if runtime != "" {
			name = runtime
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			tmpl := Template(ns, "python", PythonImage)
			if runtime != "" {
				rc := runtime
				tmpl.Spec.RuntimeClassName = &rc
			}
			env.Apply(t, tmpl)
			c := env.bridgeClient(t, ns)
			ctx := Context(t)
			sb, err := c.Claim(ctx, "python")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sb.Delete(Context(t)) })

			p, err := sb.StartArgv(ctx, []string{"/bin/sh", "-i"}, sandpod.WithPty(24, 80))
			if err != nil {
				t.Fatal(err)
			}
			out := make(chan string, 100)
			go func() {
				defer close(out)
				buf := make([]byte, 4096)
				for {
					n, err := p.Stdout().Read(buf)
					if n > 0 {
						out <- string(buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
			var screen strings.Builder
			expect := func(want string) {
				t.Helper()
				deadline := time.After(2 * time.Minute)
				for {
					if s := screen.String(); strings.Contains(s, want) {
						rest := s[strings.Index(s, want)+len(want):]
						screen.Reset()
						screen.WriteString(rest)
						return
					}
					select {
					case chunk, ok := <-out:
						if !ok {
							t.Fatalf("the terminal ended before showing %q; it showed %q", want, screen.String())
						}
						screen.WriteString(chunk)
					case <-deadline:
						t.Fatalf("the terminal did not show %q; it showed %q", want, screen.String())
					}
				}
			}
			send := func(s string) {
				t.Helper()
				if _, err := io.WriteString(p.Stdin(), s); err != nil {
					t.Fatal(err)
				}
			}
			send("stty size; tty\r")
			expect("24 80")
			expect("/dev/pts/")
			if err := p.Resize(40, 100); err != nil {
				t.Fatal(err)
			}
			send("stty size\r")
			expect("40 100")
			send("echo abc\x7fd\r")
			expect("abd\r\n")
			send("sh -c 'echo sleep''ing; exec sleep 300'\r")
			expect("sleeping\r\n")
			send("\x03")
			send("echo alive-$((40+2))\r")
			expect("alive-42")
			send("exit 3\r")
			if res, err := p.Wait(); err != nil || res.ExitCode != 3 {
				t.Fatalf("terminal exit: %+v, %v; want 3", res, err)
			}

			plain, err := sb.Start(ctx, "sleep 100")
			if err != nil {
				t.Fatal(err)
			}
			_ = plain.Resize(10, 10)
			if _, err := plain.Wait(); !errors.Is(err, sandpod.ErrFailedPrecondition) {
				t.Errorf("resize without a terminal: %v, want ErrFailedPrecondition", err)
			}

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
			if _, err := sb.Run(ctx, "mkdir w/d", sandpod.WithCheck()); err != nil {
				t.Fatal(err)
			}
			if ev := next(); ev != (sandpod.FileEvent{Type: sandpod.FileCreated, Path: "w/d", IsDir: true}) {
				t.Fatalf("event %+v, want w/d created", ev)
			}
			if _, err := sb.Run(ctx, "touch w/d/f && mv w/d/f w/g && rm w/g", sandpod.WithCheck()); err != nil {
				t.Fatal(err)
			}
			var got []string
			for len(got) < 3 {
				ev := next()
				got = append(got, string(ev.Type)+" "+ev.Path+" "+ev.OldPath)
			}
			want := []string{"create w/d/f ", "rename w/g w/d/f", "remove w/g "}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("events %q, want %q", got, want)
			}
			if _, err := sb.Files().Watch(ctx, "missing"); !errors.Is(err, sandpod.ErrFileNotFound) {
				t.Errorf("a missing directory: %v, want ErrFileNotFound", err)
			}
		})
	}
}
