package integration

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// term drives a terminal exec over the raw API: what it shows accumulates
// in screen, read by expect.
type term struct {
	t      *testing.T
	stream sandpodv1.SandboxService_ExecClient
	out    chan []byte
	exit   chan *sandpodv1.ExitStatus
	err    chan error
	screen strings.Builder
}

func openTerm(t *testing.T, c sandpodv1.SandboxServiceClient, start *sandpodv1.ExecStart) *term {
	t.Helper()
	stream, err := c.Exec(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: start}}); err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, stream: stream, out: make(chan []byte, 1000), exit: make(chan *sandpodv1.ExitStatus, 1), err: make(chan error, 1)}
	go func() {
		defer close(tm.out)
		for {
			msg, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				tm.err <- err
				return
			}
			if b := msg.GetStdout(); b != nil {
				tm.out <- b
			}
			if msg.GetStderr() != nil {
				tm.err <- errors.New("a terminal sent stderr: its output is one stream")
				return
			}
			if e := msg.GetExit(); e != nil {
				tm.exit <- e
			}
		}
	}()
	return tm
}

func (tm *term) send(s string) {
	tm.t.Helper()
	if err := tm.stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: []byte(s)}}); err != nil {
		tm.t.Fatal(err)
	}
}

func (tm *term) resize(rows, cols uint32) {
	tm.t.Helper()
	if err := tm.stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Resize{Resize: &sandpodv1.TerminalSize{Rows: rows, Cols: cols}}}); err != nil {
		tm.t.Fatal(err)
	}
}

// expect waits until the screen, after what earlier expects consumed,
// shows want; it consumes through it.
func (tm *term) expect(want string) {
	tm.t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		s := tm.screen.String()
		if i := strings.Index(s, want); i >= 0 {
			rest := s[i+len(want):]
			tm.screen.Reset()
			tm.screen.WriteString(rest)
			return
		}
		select {
		case b, ok := <-tm.out:
			if !ok {
				tm.t.Fatalf("the terminal ended before showing %q; it showed %q", want, s)
			}
			tm.screen.Write(b)
		case <-deadline:
			tm.t.Fatalf("the terminal did not show %q; it showed %q", want, s)
		}
	}
}

func (tm *term) wait() *sandpodv1.ExitStatus {
	tm.t.Helper()
	for {
		select {
		case e := <-tm.exit:
			return e
		case err := <-tm.err:
			select {
			case e := <-tm.exit: // sent before the stream's end
				return e
			default:
			}
			tm.t.Fatalf("the stream ended without an exit status: %v", err)
		case <-tm.out:
		case <-time.After(90 * time.Second):
			tm.t.Fatal("no exit status")
		}
	}
}

func ptyStart(sandbox string, rows, cols uint32, argv ...string) *sandpodv1.ExecStart {
	return &sandpodv1.ExecStart{Sandbox: sandbox, Argv: argv, Pty: &sandpodv1.PtyRequest{Size: &sandpodv1.TerminalSize{Rows: rows, Cols: cols}}}
}

// A shell on a terminal of the sandbox: its size and resizes, line
// editing, Ctrl-C, job control's own process groups, the exit code; the
// terminal is the sandbox's own and belongs to the user commands run as.
func TestTerminal(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")

	t.Run("size, resize, line editing, ctrl-c, exit code", func(t *testing.T) {
		tm := openTerm(t, c, ptyStart(sb.Name, 24, 80, "/bin/sh", "-i"))
		tm.send("stty size\r")
		tm.expect("24 80")
		tm.resize(50, 132)
		tm.send("stty size\r")
		tm.expect("50 132")
		// Typed "echo abc", a backspace, "d": the terminal's line editing
		// makes it "echo abd".
		tm.send("echo abc\x7fd\r")
		tm.expect("abd\r\n")
		// Ctrl-C interrupts the foreground job, and the shell lives on.
		// The job prints once it is the terminal's foreground group, then
		// becomes the sleep; the shell reads the next line only once the
		// sleep has ended, which takes 100 s (past the call's deadline)
		// unless the ^C interrupted it.
		tm.send("sh -c 'echo sleep''ing; exec sleep 100'\r")
		tm.expect("sleeping\r\n")
		tm.send("\x03")
		tm.send("echo alive-$((40+2))\r")
		tm.expect("alive-42")
		tm.send("exit 3\r")
		if e := tm.wait(); e.GetExitCode() != 3 || e.GetStdoutTruncated() {
			t.Errorf("exit %v, want code 3", e)
		}
	})

	t.Run("the terminal is the sandbox's, owned by the command's user", func(t *testing.T) {
		tm := openTerm(t, c, ptyStart(sb.Name, 10, 40, "/bin/sh", "-c", `echo "uid=$(id -u) tty=$(tty) owner=$(stat -c %u "$(tty)") term=$TERM"`))
		tm.expect("uid=1000 tty=/dev/pts/")
		tm.expect("owner=1000 term=xterm-256color")
		if e := tm.wait(); e.GetExitCode() != 0 {
			t.Errorf("exit %v", e)
		}
	})

	t.Run("a timeout kills the whole session, jobs in their own groups too", func(t *testing.T) {
		start := ptyStart(sb.Name, 24, 80, "/bin/sh", "-i")
		start.Timeout = dur(3 * time.Second)
		tm := openTerm(t, c, start)
		// With job control the background job is in a group of its own.
		tm.send("sleep 1000 & echo job=$!\r")
		tm.expect("job=")
		if e := tm.wait(); !e.GetTimedOut() {
			t.Fatalf("exit %v, want timed out", e)
		}
		eventually(t, "the background job killed", func() bool {
			// /proc directly: the image need not have pgrep.
			r := sh(t, c, sb.Name, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done | grep -c '^sleep 1000 $' || true`)
			return strings.TrimSpace(r.stdout) == "0"
		})
	})

	t.Run("a resize on an exec without a terminal", func(t *testing.T) {
		tm := openTerm(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Argv: []string{"sleep", "100"}})
		tm.resize(10, 10)
		var err error
		select {
		case err = <-tm.err:
		case <-time.After(90 * time.Second):
			t.Fatal("the call did not end")
		}
		wantCode(t, err, codes.FailedPrecondition, "has no terminal")
		wantWhy(t, err, errinfo.ReasonNoTerminal)
	})

	t.Run("bad sizes", func(t *testing.T) {
		for _, sz := range [][2]uint32{{0, 80}, {24, 0}, {1001, 80}, {24, 5000}} {
			_, err := execIn(t, c, ptyStart(sb.Name, sz[0], sz[1], "true"), "")
			wantCode(t, err, codes.InvalidArgument, "pty: rows and cols must each be between 1 and 1000")
			wantWhy(t, err, errinfo.ReasonInvalidTerminal)
		}
		tm := openTerm(t, c, ptyStart(sb.Name, 24, 80, "sleep", "100"))
		tm.resize(0, 0)
		var err error
		select {
		case err = <-tm.err:
		case <-time.After(90 * time.Second):
			t.Fatal("the call did not end")
		}
		wantCode(t, err, codes.InvalidArgument, "resize: rows and cols")
		wantWhy(t, err, errinfo.ReasonInvalidTerminal)
	})

	t.Run("a sandbox cannot take the host's pseudo-terminals", func(t *testing.T) {
		// Its own devpts instance holds at most 256: opening more fails
		// inside the sandbox, and a terminal exec works again once they
		// are closed.
		r := sh(t, c, sb.Name, `python3 -c '
import os
fds = []
try:
    while len(fds) < 1000:
        fds.append(os.openpty())
except OSError as e:
    print(len(fds), e.errno)
'`)
		if strings.TrimSpace(r.stdout) != "256 28" { // ENOSPC
			t.Errorf("ptys opened before the limit: %q (stderr %q), want 256, then ENOSPC", r.stdout, r.stderr)
		}
		tm := openTerm(t, c, ptyStart(sb.Name, 24, 80, "tty"))
		tm.expect("/dev/pts/")
		if e := tm.wait(); e.GetExitCode() != 0 {
			t.Errorf("exit %v", e)
		}
	})

	t.Run("output is capped like any exec's", func(t *testing.T) {
		start := ptyStart(sb.Name, 24, 80, "/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x")
		start.MaxOutputBytes = 100000
		r, err := execIn(t, c, start, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.stdout) != 100000 || !r.exit.GetStdoutTruncated() {
			t.Errorf("%d bytes, truncated %v; want 100000, true", len(r.stdout), r.exit.GetStdoutTruncated())
		}
	})
}
