package sandpod

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stdinChunk is the most stdin bytes sent in one message.
const stdinChunk = 256 << 10

// ExecOption configures Run and Start.
type ExecOption interface{ applyExec(*execConfig) }

type execConfig struct {
	env       map[string]string
	dir       string
	timeout   time.Duration
	maxOutput int64
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	check     bool
	pty       *pb.PtyRequest
}

type execOptionFunc func(*execConfig)

func (f execOptionFunc) applyExec(c *execConfig) { f(c) }

func newExecConfig(opts []ExecOption) *execConfig {
	cfg := &execConfig{}
	for _, o := range opts {
		o.applyExec(cfg)
	}
	return cfg
}

// EnvOption sets environment variables. Given to Claim or Create, every
// exec in the sandbox gets them; given to Run or Start, that command does
// (and its values win). Several EnvOptions add up.
type EnvOption map[string]string

// WithEnv sets environment variables; see EnvOption.
func WithEnv(env map[string]string) EnvOption { return EnvOption(env) }

func (e EnvOption) applySandbox(c *sandboxConfig) {
	if c.env == nil {
		c.env = map[string]string{}
	}
	maps.Copy(c.env, e)
}

func (e EnvOption) applyExec(c *execConfig) {
	if c.env == nil {
		c.env = map[string]string{}
	}
	maps.Copy(c.env, e)
}

// WithDir runs the command in dir, relative to the sandbox's root (the
// default).
func WithDir(dir string) ExecOption {
	return execOptionFunc(func(c *execConfig) { c.dir = dir })
}

// WithTimeout makes the server kill the command's whole process group
// after d. The Result then has TimedOut set (and WithCheck turns it into a
// *CommandError that matches ErrTimeout). To bound the call itself, use
// the context.
func WithTimeout(d time.Duration) ExecOption {
	return execOptionFunc(func(c *execConfig) { c.timeout = d })
}

// WithMaxOutput caps the bytes the server sends per stream (stdout,
// stderr); past it output is dropped and Result.StdoutTruncated or
// StderrTruncated set. The server's default is 16 MiB, its maximum 1 GiB.
func WithMaxOutput(n int64) ExecOption {
	return execOptionFunc(func(c *execConfig) { c.maxOutput = n })
}

// WithStdin feeds r to the command's standard input, then closes it. By
// default Run gives the command an empty stdin, and Start leaves stdin
// open for Process.Stdin. Run returns when the command ends, even if a
// Read of r is still blocked (that goroutine ends when the Read returns).
func WithStdin(r io.Reader) ExecOption {
	return execOptionFunc(func(c *execConfig) { c.stdin = r })
}

// WithStdout also copies the command's stdout to w as it arrives (Run), or
// sends it to w instead of Process.Stdout (Start).
func WithStdout(w io.Writer) ExecOption {
	return execOptionFunc(func(c *execConfig) { c.stdout = w })
}

// WithStderr is WithStdout for stderr.
func WithStderr(w io.Writer) ExecOption {
	return execOptionFunc(func(c *execConfig) { c.stderr = w })
}

// WithCheck makes Run and Wait return a *CommandError when the command
// does not succeed (non-zero exit, signal or timeout), alongside the
// Result.
func WithCheck() ExecOption {
	return execOptionFunc(func(c *execConfig) { c.check = true })
}

// WithPty runs the command on a pseudo-terminal of rows×cols (each 1 to
// 1000) in the sandbox, as a terminal emulator would: Stdin is what is
// typed (Ctrl-C is "\x03", backspace "\x7f", Enter "\r"), Stdout what the
// terminal shows (output and echo; Stderr stays empty), and the command
// leads its own session with job control. Change the size with
// Process.Resize. TERM is xterm-256color unless WithEnv sets it. Closing
// Stdin does not end a terminal's input: write "\x04" (Ctrl-D).
func WithPty(rows, cols int) ExecOption {
	return execOptionFunc(func(c *execConfig) {
		c.pty = &pb.PtyRequest{Size: &pb.TerminalSize{Rows: clampSize(rows), Cols: clampSize(cols)}}
	})
}

// clampSize fits a size into the wire's uint32 without wrapping (a
// negative one becomes 0): the server refuses 0 and sizes over 1000 with
// ErrInvalidArgument, naming what it got.
func clampSize(n int) uint32 {
	return uint32(max(0, min(n, 1<<30)))
}

// Result is how a command ended.
type Result struct {
	// Stdout and Stderr hold the output (Run only: a Process's output is
	// read from its Stdout and Stderr readers).
	Stdout []byte
	Stderr []byte
	// ExitCode is the exit code, -1 when killed by a signal.
	ExitCode int
	// Signal is the signal that ended the command, 0 if none.
	Signal int
	// TimedOut says the server killed the command at its WithTimeout.
	TimedOut bool
	// Duration is how long the command ran, measured by the server.
	Duration time.Duration
	// StdoutTruncated and StderrTruncated say output was dropped past the
	// WithMaxOutput cap.
	StdoutTruncated bool
	StderrTruncated bool
	// PID is the command's process id inside the sandbox.
	PID int
}

// Success reports whether the command exited with code 0.
func (r *Result) Success() bool {
	return r.ExitCode == 0 && r.Signal == 0 && !r.TimedOut
}

// Run runs a command line with /bin/sh -c in the sandbox and waits for it.
// The error is nil when the command ran, whatever its exit code (unless
// WithCheck); it is an *Error when it could not run or the call failed. A
// command is never re-run by the client.
func (s *Sandbox) Run(ctx context.Context, command string, opts ...ExecOption) (*Result, error) {
	return s.run(ctx, &pb.ExecStart{Shell: command}, command, opts)
}

// RunArgv runs a program with arguments, without a shell; see Run.
func (s *Sandbox) RunArgv(ctx context.Context, argv []string, opts ...ExecOption) (*Result, error) {
	return s.run(ctx, &pb.ExecStart{Argv: argv}, strings.Join(argv, " "), opts)
}

func (s *Sandbox) run(ctx context.Context, start *pb.ExecStart, display string, opts []ExecOption) (*Result, error) {
	cfg := newExecConfig(opts)
	var stdout, stderr bytes.Buffer
	outW, errW := io.Writer(&stdout), io.Writer(&stderr)
	if cfg.stdout != nil {
		outW = io.MultiWriter(&stdout, cfg.stdout)
	}
	if cfg.stderr != nil {
		errW = io.MultiWriter(&stderr, cfg.stderr)
	}
	if cfg.stdin == nil {
		cfg.stdin = bytes.NewReader(nil)
	}
	p, err := s.start(ctx, start, display, cfg, outW, errW)
	if err != nil {
		return nil, err
	}
	res, err := p.Wait()
	if res != nil {
		res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	}
	return res, err
}

// Start starts a command line with /bin/sh -c in the sandbox and returns
// at once, with the command's stdin, stdout and stderr as streams. The
// command ends when ctx does. Wait for it with Process.Wait.
func (s *Sandbox) Start(ctx context.Context, command string, opts ...ExecOption) (*Process, error) {
	cfg := newExecConfig(opts)
	return s.start(ctx, &pb.ExecStart{Shell: command}, command, cfg, cfg.stdout, cfg.stderr)
}

// StartArgv starts a program with arguments, without a shell; see Start.
func (s *Sandbox) StartArgv(ctx context.Context, argv []string, opts ...ExecOption) (*Process, error) {
	cfg := newExecConfig(opts)
	return s.start(ctx, &pb.ExecStart{Argv: argv}, strings.Join(argv, " "), cfg, cfg.stdout, cfg.stderr)
}

// Process is a command started by Start. Its output not yet read waits in
// memory; read Stdout and Stderr (or pass WithStdout/WithStderr) to
// stream it.
type Process struct {
	command string
	check   bool
	stream  pb.SandboxService_ExecClient
	cancel  context.CancelFunc

	stdout, stderr io.Writer // where output goes
	outPipe        *bufPipe  // nil when WithStdout was given
	errPipe        *bufPipe

	sendMu      sync.Mutex
	stdinClosed bool
	sendDone    bool

	// Stdin flow control: at most window bytes sent and not yet acked by
	// the server (ExecStarted.stdin_window, ExecResponse.stdin_acked). A
	// stdin write waits here, holding no lock that Signal needs, so a
	// signal is sent at once however much stdin the command leaves unread.
	flowMu sync.Mutex
	flow   sync.Cond
	window int64 // 0: the server has none (older servers)
	sent   int64
	acked  int64

	exited atomic.Bool
	pid    atomic.Int32
	done   chan struct{}
	result *Result
	err    error
}

func (s *Sandbox) start(ctx context.Context, start *pb.ExecStart, display string, cfg *execConfig, stdout, stderr io.Writer) (*Process, error) {
	if err := s.c.check(); err != nil {
		return nil, err
	}
	start.Sandbox, start.Namespace = s.name, s.ns
	start.Env, start.WorkingDir = cfg.env, cfg.dir
	start.Timeout, start.MaxOutputBytes = durationToProto(cfg.timeout), cfg.maxOutput
	start.Pty = cfg.pty

	if err := s.c.awaitServer(ctx, "exec"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := s.c.rpc.Exec(ctx)
	if err != nil {
		cancel()
		return nil, wrapError("exec", err)
	}
	p := &Process{command: display, check: cfg.check, stream: stream, cancel: cancel, stdout: stdout, stderr: stderr, done: make(chan struct{})}
	p.flow.L = &p.flowMu
	if p.stdout == nil {
		p.outPipe = newBufPipe()
		p.stdout = p.outPipe
	}
	if p.stderr == nil {
		p.errPipe = newBufPipe()
		p.stderr = p.errPipe
	}
	// A failed Send (io.EOF) means the stream ended: Recv says why.
	_ = stream.Send(&pb.ExecRequest{Msg: &pb.ExecRequest_Start{Start: start}})
	first, err := stream.Recv()
	if err != nil {
		err = s.observe(ctx, wrapError("exec", err)) // before cancel: it may call GetSandbox
		cancel()
		return nil, err
	}
	_ = s.observe(ctx, nil)
	if !p.handle(first) {
		go p.recvLoop()
	}
	if cfg.stdin != nil {
		go func() {
			_, _ = io.Copy(p.Stdin(), cfg.stdin)
			_ = p.Stdin().Close()
		}()
	}
	return p, nil
}

// handle processes one response; it reports whether it was the last.
func (p *Process) handle(m *pb.ExecResponse) bool {
	switch x := m.GetMsg().(type) {
	case *pb.ExecResponse_Started:
		p.pid.Store(x.Started.GetPid())
		p.flowMu.Lock()
		p.window = x.Started.GetStdinWindow()
		p.flowMu.Unlock()
	case *pb.ExecResponse_StdinAcked:
		p.flowMu.Lock()
		p.acked = max(p.acked, x.StdinAcked)
		p.flow.Broadcast()
		p.flowMu.Unlock()
	case *pb.ExecResponse_Stdout:
		_, _ = p.stdout.Write(x.Stdout)
	case *pb.ExecResponse_Stderr:
		_, _ = p.stderr.Write(x.Stderr)
	case *pb.ExecResponse_Exit:
		e := x.Exit
		p.finish(&Result{
			ExitCode:        int(e.GetExitCode()),
			Signal:          int(e.GetSignal()),
			TimedOut:        e.GetTimedOut(),
			Duration:        durationFromProto(e.GetDuration()),
			StdoutTruncated: e.GetStdoutTruncated(),
			StderrTruncated: e.GetStderrTruncated(),
			PID:             int(p.pid.Load()),
		}, nil)
		return true
	}
	return false
}

func (p *Process) recvLoop() {
	for {
		m, err := p.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = status.Error(codes.Internal, "the exec stream ended without an exit status")
			}
			p.finish(nil, wrapError("exec", err))
			return
		}
		if p.handle(m) {
			return
		}
	}
}

func (p *Process) finish(res *Result, err error) {
	p.exited.Store(true)
	p.result, p.err = res, err
	if p.outPipe != nil {
		p.outPipe.closeWithError(err)
	}
	if p.errPipe != nil {
		p.errPipe.closeWithError(err)
	}
	// The exit status is the last message: end the call, which also
	// unblocks a stdin write waiting for flow control.
	p.cancel()
	p.sendMu.Lock()
	p.sendDone = true
	p.sendMu.Unlock()
	p.flowMu.Lock()
	p.flow.Broadcast() // a stdin write waiting for room returns
	p.flowMu.Unlock()
	close(p.done)
}

// reserve waits until the server's stdin window has room, counts the next
// chunk of a write of want bytes as sent (as much as fits) and returns its
// size.
func (p *Process) reserve(want int) (int, error) {
	p.flowMu.Lock()
	defer p.flowMu.Unlock()
	n := int64(min(want, stdinChunk))
	for p.window > 0 {
		if room := p.window - (p.sent - p.acked); room > 0 {
			n = min(n, room)
			break
		}
		if p.exited.Load() {
			return 0, os.ErrProcessDone
		}
		p.flow.Wait()
	}
	p.sent += n
	return int(n), nil
}

// PID returns the command's process id inside the sandbox (0 if the
// server did not say).
func (p *Process) PID() int { return int(p.pid.Load()) }

// Stdin returns the command's standard input. Close it to send EOF.
// Writes are paced by what the command reads (at most the server's stdin
// window, a few MiB, waits unread), so a write to a command that does not
// read blocks until it does, ends or is killed. Writes after the command
// ended return os.ErrProcessDone.
func (p *Process) Stdin() io.WriteCloser { return stdinWriter{p} }

// Stdout returns the command's standard output. It ends with io.EOF when
// the command ends, or with the call's error. With WithStdout it is empty.
func (p *Process) Stdout() io.Reader {
	if p.outPipe == nil {
		return bytes.NewReader(nil)
	}
	return p.outPipe
}

// Stderr returns the command's standard error; see Stdout.
func (p *Process) Stderr() io.Reader {
	if p.errPipe == nil {
		return bytes.NewReader(nil)
	}
	return p.errPipe
}

// Signal sends sig to the command's whole process group. It goes out at
// once, also while a Stdin write waits for a command that does not read.
func (p *Process) Signal(sig syscall.Signal) error {
	return p.send(&pb.ExecRequest{Msg: &pb.ExecRequest_Signal{Signal: int32(sig)}}, false)
}

// Resize changes the size of the terminal of a command started WithPty;
// the command gets SIGWINCH. On a command without a terminal the server
// ends the call with ErrFailedPrecondition (and kills the command): Wait
// returns that error. It goes out at once, like Signal.
func (p *Process) Resize(rows, cols int) error {
	sz := &pb.TerminalSize{Rows: clampSize(rows), Cols: clampSize(cols)}
	return p.send(&pb.ExecRequest{Msg: &pb.ExecRequest_Resize{Resize: sz}}, false)
}

// Kill sends SIGKILL to the command's process group.
func (p *Process) Kill() error { return p.Signal(syscall.SIGKILL) }

// Done is closed when the command has ended (or the call failed).
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the command to end and returns how it ended. The error is
// an *Error when the call failed (the command may still have run), or a
// *CommandError with WithCheck.
func (p *Process) Wait() (*Result, error) {
	<-p.done
	if p.err != nil {
		return nil, p.err
	}
	if p.check && !p.result.Success() {
		return p.result, &CommandError{Command: p.command, ExitCode: p.result.ExitCode, Result: p.result}
	}
	return p.result, nil
}

func (p *Process) send(m *pb.ExecRequest, stdin bool) error {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if p.sendDone {
		return os.ErrProcessDone
	}
	if stdin && p.stdinClosed {
		return io.ErrClosedPipe
	}
	if _, ok := m.GetMsg().(*pb.ExecRequest_CloseStdin); ok {
		p.stdinClosed = true
	}
	if err := p.stream.Send(m); err != nil {
		if errors.Is(err, io.EOF) || p.exited.Load() {
			return os.ErrProcessDone
		}
		return wrapError("exec", err)
	}
	return nil
}

type stdinWriter struct{ p *Process }

// Write sends b in chunks, each once the server's stdin window has room
// for it: a write to a command that does not read its stdin blocks (until
// the command reads, ends, or is killed), while Signal and Kill still go
// through.
func (w stdinWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		size, err := w.p.reserve(len(b))
		if err != nil {
			return n, err
		}
		c := b[:size]
		if err := w.p.send(&pb.ExecRequest{Msg: &pb.ExecRequest_Stdin{Stdin: c}}, true); err != nil {
			return n, err
		}
		n += len(c)
		b = b[len(c):]
	}
	return n, nil
}

func (w stdinWriter) Close() error {
	w.p.sendMu.Lock()
	closed := w.p.stdinClosed
	w.p.sendMu.Unlock()
	if closed {
		return nil
	}
	err := w.p.send(&pb.ExecRequest{Msg: &pb.ExecRequest_CloseStdin{CloseStdin: true}}, true)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}
