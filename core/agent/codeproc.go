package agent

import (
	"bufio"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// executorSource is the Python side of a code context (see executor.py):
// passed with `python3 -c`, so nothing is written into the sandbox and any
// python3 works, without Jupyter or ZeroMQ in the image.
//
//go:embed executor.py
var executorSource string

// readyTimeout bounds the start of an interpreter (it imports only the
// standard library; a loaded machine may still take seconds).
const readyTimeout = 60 * time.Second

// abandonAfter is how long the output of a dead context waits for a cell
// to read it.
const abandonAfter = 10 * time.Second

// outChunk is output of a context's stdout (1) or stderr (2); marker means
// the cell's end marker was seen on that stream, eof that it closed.
type outChunk struct {
	fd     int
	data   []byte
	marker bool
	eof    bool
}

// codeContext is one long-lived interpreter.
type codeContext struct {
	id, language, cwd string
	created           time.Time
	marker            string

	cmd    *exec.Cmd
	pid    int
	req    *os.File // the executor's fd 3
	frames chan *execFrame
	// brokenFrame is why a broken frame ended the context (a string), set
	// before the kill.
	brokenFrame atomic.Value
	out         chan outChunk
	dead        chan struct{} // closed when the process has exited
	exitMsg     string        // how it exited, set before dead closes
	// abandon closes a while after the process exited: the readers stop
	// waiting for a cell to take their output.
	abandon chan struct{}

	turn    chan struct{} // one cell at a time
	count   atomic.Int64
	busy    atomic.Bool
	killed  atomic.Bool
	deleted atomic.Bool
	closeMu sync.Once
}

// newMarker is a random end-of-cell marker. Control characters around it
// keep it from appearing in ordinary output; the code in the context could
// still learn and print it, which only cuts its own output short.
func newMarker() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "\x1e\x1fsandpod-" + hex.EncodeToString(b[:]) + "\x1f\x1e"
}

// startContext starts an interpreter and waits until it is ready.
func (s *Server) startContext(ctx context.Context, id, cwd string, env map[string]string) (*codeContext, error) {
	dir, err := s.workingDir(cwd)
	if err != nil {
		return nil, err
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonInterpreterNotFound, "code context: no python3 in the sandbox's PATH (%v); run_code needs a python3 interpreter in the image", err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, errinfo.Newf(codes.Internal, errinfo.ReasonExecPipeFailed, "code context: pipe: %v", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW)
		return nil, errinfo.Newf(codes.Internal, errinfo.ReasonExecPipeFailed, "code context: pipe: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW, repR, repW)
		return nil, errinfo.Newf(codes.Internal, errinfo.ReasonExecPipeFailed, "code context: pipe: %v", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW, repR, repW, outR, outW)
		return nil, errinfo.Newf(codes.Internal, errinfo.ReasonExecPipeFailed, "code context: pipe: %v", err)
	}
	base := mergeEnv(s.cfg.Env, env)
	if _, ok := env["MPLBACKEND"]; !ok {
		base = mergeEnv(base, map[string]string{"MPLBACKEND": "Agg"})
	}
	cmd := exec.Command(python, "-c", executorSource)
	cmd.Dir = dir
	cmd.Env = base
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{reqR, repW} // fds 3 and 4
	// Its own process group, as the run-as user: a kill ends whatever the
	// cell started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cfg.RunAs}
	if err := cmd.Start(); err != nil {
		closeAll(reqR, reqW, repR, repW, outR, outW, errR, errW)
		if errors.Is(err, syscall.EAGAIN) {
			return nil, errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonSandboxProcessLimit, "code context: sandbox process limit reached: %v", err)
		}
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonCodeContextStartFailed, "code context: start python3: %v", err)
	}
	closeAll(reqR, repW, outW, errW)
	c := &codeContext{
		id: id, language: "python", cwd: cwd, created: time.Now(), marker: newMarker(),
		cmd: cmd, pid: cmd.Process.Pid, req: reqW,
		frames: make(chan *execFrame, 16), out: make(chan outChunk, 64),
		dead: make(chan struct{}), abandon: make(chan struct{}), turn: make(chan struct{}, 1),
	}
	go c.readFrames(repR)
	go c.pump(outR, 1)
	go c.pump(errR, 2)
	go func() {
		err := cmd.Wait()
		c.exitMsg = describeExit(cmd.ProcessState, err)
		close(c.dead)
		c.close() // the rest of its process group goes with it
		time.AfterFunc(abandonAfter, func() { close(c.abandon) })
	}()

	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case f, ok := <-c.frames:
		if ok && f.T == "ready" {
			return c, nil
		}
		c.kill()
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonCodeContextStartFailed, "code context: python3 did not start the executor%s", c.earlyOutput())
	case <-c.dead:
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonCodeContextStartFailed, "code context: python3 %s before it was ready%s", c.exitMsg, c.earlyOutput())
	case <-timer.C:
		c.kill()
		return nil, errinfo.Newf(codes.Unavailable, errinfo.ReasonCodeContextNotReady, "code context: python3 was not ready within %s; the sandbox may be overloaded", readyTimeout)
	case <-ctx.Done():
		c.kill()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// earlyOutput is what a context that failed to start wrote (e.g. a
// python3 too old for the executor), for the error message.
func (c *codeContext) earlyOutput() string {
	var b []byte
	deadline := time.After(500 * time.Millisecond)
	for len(b) < 2048 {
		select {
		case ch := <-c.out:
			b = append(b, ch.data...)
		case <-deadline:
			return formatEarly(b)
		}
	}
	return formatEarly(b)
}

func formatEarly(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return ": " + string(b)
}

func (c *codeContext) readFrames(r *os.File) {
	defer close(c.frames)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		f, err := readFrame(br, maxFrame)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.brokenFrame.Store(err.Error())
				// A broken protocol (the context's code wrote to fd 4, or
				// sent too much): the context cannot be trusted to end a
				// cell any more.
				c.kill()
			}
			return
		}
		select {
		case c.frames <- f:
		case <-c.abandon:
			return
		}
	}
}

// send passes a chunk on to the cell reading the context's output.
func (c *codeContext) send(ch outChunk) {
	select {
	case c.out <- ch:
	case <-c.abandon:
	}
}

// pump forwards a stream's output, turning the end marker into a mark.
func (c *codeContext) pump(r *os.File, fd int) {
	defer r.Close()
	sc := markerScanner{marker: []byte(c.marker)}
	buf := make([]byte, chunkSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			for {
				out, found, rest := sc.feed(chunk)
				if len(out) > 0 {
					c.send(outChunk{fd: fd, data: out})
				}
				if !found {
					break
				}
				c.send(outChunk{fd: fd, marker: true})
				chunk = rest
			}
		}
		if err != nil {
			if h := sc.flush(); len(h) > 0 {
				c.send(outChunk{fd: fd, data: h})
			}
			c.send(outChunk{fd: fd, eof: true})
			return
		}
	}
}

// interrupt raises KeyboardInterrupt in the cell (the interpreter only,
// as Jupyter does: not the processes the cell started). The signal goes to
// the interpreter's main thread, which runs the cell: sent to the process,
// the kernel may hand it to another thread (numpy's BLAS threads), and
// Python then raises only once the main thread's blocking call (a sleep)
// returns by itself, past the interrupt's grace.
func (c *codeContext) interrupt() { _ = syscall.Tgkill(c.pid, c.pid, syscall.SIGINT) }

// kill ends the interpreter and everything it started.
func (c *codeContext) kill() {
	c.killed.Store(true)
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
}

// close kills the process group and closes the request pipe (the
// executor exits on its EOF).
func (c *codeContext) close() {
	c.closeMu.Do(func() {
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		_ = c.req.Close()
	})
}

func describeExit(ps *os.ProcessState, err error) string {
	if ps == nil {
		return fmt.Sprintf("ended (%v)", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with code %d", ps.ExitCode())
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
