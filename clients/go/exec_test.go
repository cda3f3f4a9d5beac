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
	"time"
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

// A command that reads no stdin gets 64 MiB written to it, then Kill: the
// write waits inside the server's stdin window (never sending past it)
// and the kill goes out at once, behind it.
func TestKillWhileStdinWaitsForTheWindow(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := c.Sandbox("python-1").Start(ctx, "sleep")
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Stdin().Write(make([]byte, 64<<20))
		wrote <- err
	}()
	// Wait until the window is full: the write is blocked now.
	for {
		f.mu.Lock()
		full := f.stdinReceived >= fakeWindow
		f.mu.Unlock()
		if full {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	res, err := p.Wait()
	if err != nil || res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("wait = %+v, %v; want killed by SIGKILL", res, err)
	}
	if err := <-wrote; !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("the blocked write returned %v, want os.ErrProcessDone", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxUnacked > fakeWindow {
		t.Errorf("the client had %d bytes unacknowledged, over the window of %d", f.maxUnacked, fakeWindow)
	}
}

// Stdin far larger than the window reaches a command that reads it, all of
// it, in order.
func TestStdinLargerThanTheWindow(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	in := make([]byte, 5*fakeWindow+3)
	for i := range in {
		in[i] = byte(i % 251)
	}
	res, err := c.Sandbox("python-1").Run(context.Background(), "cat", WithStdin(bytes.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Stdout, in) {
		t.Fatalf("cat returned %d bytes, want the %d sent", len(res.Stdout), len(in))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxUnacked > fakeWindow {
		t.Errorf("the client had %d bytes unacknowledged, over the window of %d", f.maxUnacked, fakeWindow)
	}
}
