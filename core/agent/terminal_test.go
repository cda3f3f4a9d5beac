package agent

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestCheckPty(t *testing.T) {
	size := func(r, c uint32) *sandpodv1.TerminalSize { return &sandpodv1.TerminalSize{Rows: r, Cols: c} }
	for _, tc := range []struct {
		pty *sandpodv1.PtyRequest
		ok  bool
	}{
		{nil, true},
		{&sandpodv1.PtyRequest{Size: size(24, 80)}, true},
		{&sandpodv1.PtyRequest{Size: size(1, 1), Term: "vt100"}, true},
		{&sandpodv1.PtyRequest{Size: size(1000, 1000)}, true},
		{&sandpodv1.PtyRequest{}, false},
		{&sandpodv1.PtyRequest{Size: size(0, 80)}, false},
		{&sandpodv1.PtyRequest{Size: size(24, 0)}, false},
		{&sandpodv1.PtyRequest{Size: size(1001, 80)}, false},
		{&sandpodv1.PtyRequest{Size: size(24, 70000)}, false},
		{&sandpodv1.PtyRequest{Size: size(24, 80), Term: "x term"}, false},
		{&sandpodv1.PtyRequest{Size: size(24, 80), Term: "xterm\n"}, false},
		{&sandpodv1.PtyRequest{Size: size(24, 80), Term: strings.Repeat("x", 65)}, false},
	} {
		if err := CheckPty(tc.pty); (err == nil) != tc.ok {
			t.Errorf("CheckPty(%v) = %v, want ok %v", tc.pty, err, tc.ok)
		}
	}
}

func TestStatSession(t *testing.T) {
	for _, tc := range []struct {
		stat string
		sid  int
		ok   bool
	}{
		{"123 (bash) S 1 123 123 34816 123 4194304", 123, true},
		{"77 (a b) c)) R 5 70 71 0", 71, true},
		{"77 (x", 0, false},
		{"77 (x) R 5", 0, false},
	} {
		sid, ok := statSession(tc.stat)
		if sid != tc.sid || ok != tc.ok {
			t.Errorf("statSession(%q) = %d, %v; want %d, %v", tc.stat, sid, ok, tc.sid, tc.ok)
		}
	}
}

// A terminal exec over the agent: the command sees a terminal of the
// asked size, a resize reaches it, and output and echo come as stdout.
func TestExecPtyAgent(t *testing.T) {
	client, ctx, _ := startAgent(t)
	stream, err := client.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := &sandpodv1.ExecStart{Argv: []string{"/bin/sh"}, Pty: &sandpodv1.PtyRequest{Size: &sandpodv1.TerminalSize{Rows: 30, Cols: 100}}}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: start}}); err != nil {
		t.Fatal(err)
	}
	out := make(chan []byte, 100)
	exit := make(chan *sandpodv1.ExitStatus, 1)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				close(out)
				return
			}
			if b := m.GetStdout(); b != nil {
				out <- b
			}
			if e := m.GetExit(); e != nil {
				exit <- e
			}
		}
	}()
	var seen bytes.Buffer
	expect := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(seen.String(), want) {
			select {
			case b, ok := <-out:
				if !ok {
					t.Fatalf("stream ended before %q; got %q", want, seen.String())
				}
				seen.Write(b)
			case <-deadline:
				t.Fatalf("no %q in %q", want, seen.String())
			}
		}
	}
	stdin := func(s string) {
		if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: []byte(s)}}); err != nil {
			t.Fatal(err)
		}
	}
	stdin("stty size; tty; echo T=$TERM\r")
	expect("30 100")
	expect("/dev/pts/")
	expect("T=xterm-256color")
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Resize{Resize: &sandpodv1.TerminalSize{Rows: 40, Cols: 132}}}); err != nil {
		t.Fatal(err)
	}
	stdin("stty size\r")
	expect("40 132")
	stdin("exit 3\r")
	select {
	case e := <-exit:
		if e.GetExitCode() != 3 {
			t.Errorf("exit %v, want 3", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit status")
	}
}

// A resize on an exec without a terminal ends the call with
// FAILED_PRECONDITION; a bad size on a terminal with INVALID_ARGUMENT.
func TestExecResizeRefusedAgent(t *testing.T) {
	client, ctx, _ := startAgent(t)
	for _, tc := range []struct {
		pty  *sandpodv1.PtyRequest
		size *sandpodv1.TerminalSize
		code codes.Code
	}{
		{nil, &sandpodv1.TerminalSize{Rows: 10, Cols: 10}, codes.FailedPrecondition},
		{&sandpodv1.PtyRequest{Size: &sandpodv1.TerminalSize{Rows: 10, Cols: 10}}, &sandpodv1.TerminalSize{Rows: 0, Cols: 10}, codes.InvalidArgument},
	} {
		stream, err := client.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := &sandpodv1.ExecStart{Argv: []string{"sleep", "100"}, Pty: tc.pty}
		_ = stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: start}})
		_ = stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Resize{Resize: tc.size}})
		var err2 error
		for err2 == nil {
			_, err2 = stream.Recv()
		}
		if errors.Is(err2, io.EOF) || status.Code(err2) != tc.code {
			t.Errorf("pty %v, resize %v: %v, want %v", tc.pty, tc.size, err2, tc.code)
		}
	}
}
