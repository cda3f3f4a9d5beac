package sandpod

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestRunCollectsOutput(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	sb := c.Sandbox("python-1")
	var tee bytes.Buffer
	res, err := sb.Run(context.Background(), "hello", WithStdout(&tee))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "hello\n" || string(res.Stderr) != "err\n" || res.ExitCode != 3 || res.PID != 42 || res.Success() {
		t.Errorf("result = %+v", res)
	}
	if tee.String() != "hello\n" {
		t.Errorf("tee = %q", tee.String())
	}
}

func TestRunCheck(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	res, err := c.Sandbox("python-1").Run(context.Background(), "hello", WithCheck())
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 3 || res == nil || string(ce.Result.Stdout) != "hello\n" {
		t.Fatalf("err = %v, res = %+v", err, res)
	}
}

func TestRunStdin(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	in := strings.Repeat("x", 3*stdinChunk+7)
	res, err := c.Sandbox("python-1").Run(context.Background(), "cat", WithStdin(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != in || res.ExitCode != 0 {
		t.Errorf("got %d bytes, exit %d", len(res.Stdout), res.ExitCode)
	}
}

func TestRunIsNeverRetried(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("exec", 14) // Unavailable
	_, err := c.Sandbox("python-1").Run(context.Background(), "hello")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("exec"); n != 1 {
		t.Errorf("exec attempts = %d, want 1", n)
	}
}

func TestProcessStreams(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	p, err := c.Sandbox("python-1").Start(context.Background(), "cat")
	if err != nil {
		t.Fatal(err)
	}
	if p.PID() != 42 {
		t.Errorf("pid = %d", p.PID())
	}
	if _, err := io.WriteString(p.Stdin(), "ping\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(p.Stdout(), buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if _, err := io.WriteString(p.Stdin(), "pong\n"); err != nil {
		t.Fatal(err)
	}
	if err := p.Stdin().Close(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(p.Stdout())
	if err != nil || string(rest) != "pong\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("wait: %+v, %v", res, err)
	}
	if _, err := p.Stdin().Write([]byte("late")); !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write after exit: %v", err)
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("signal after exit: %v", err)
	}
}

func TestProcessSignal(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	p, err := c.Sandbox("python-1").Start(context.Background(), "cat", WithCheck())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	var ce *CommandError
	if !errors.As(err, &ce) || res.Signal != 9 || res.ExitCode != -1 {
		t.Fatalf("wait: %+v, %v", res, err)
	}
}

func TestProcessContextCancel(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := c.Sandbox("python-1").Start(ctx, "cat")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := p.Wait(); !errors.Is(err, ErrCanceled) {
		t.Fatalf("wait: %v", err)
	}
	if _, err := io.ReadAll(p.Stdout()); !errors.Is(err, ErrCanceled) {
		t.Errorf("stdout after cancel: %v", err)
	}
}
