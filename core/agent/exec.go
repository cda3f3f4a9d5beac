package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

const (
	// DefaultMaxOutput is the per-stream cap on kept output.
	DefaultMaxOutput = 16 << 20
	// MaxMaxOutput bounds what a caller may ask to keep.
	MaxMaxOutput = 1 << 30
	chunkSize    = 32 << 10
	// drainGrace is how long output is still read after the command exits,
	// for children that inherited its stdout; past it the pipes are closed
	// so a background child cannot hold the call open.
	drainGrace = 200 * time.Millisecond
)

// Exec runs one command. See ExecRequest for the protocol.
func (s *Server) Exec(stream sandpodv1.AgentService_ExecServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidStream, "exec: the first message must be start")
	}
	cmd, err := s.command(start)
	if err != nil {
		return err
	}
	maxOut := start.GetMaxOutputBytes()
	if maxOut == 0 {
		maxOut = DefaultMaxOutput
	}

	var xio execIO
	if start.GetPty() != nil {
		xio, err = s.ptyIO(cmd, start.GetPty().GetSize())
	} else {
		xio, err = pipeIO(cmd)
	}
	if err != nil {
		return err
	}

	began := time.Now()
	if err := cmd.Start(); err != nil {
		xio.abort()
		if code, why, ok := notRunnable(cmd, err); ok {
			s.touch()
			return shellLikeExit(stream, code, why, began)
		}
		return startError(start, cmd, err)
	}
	xio.started()
	s.running.Add(1)
	defer s.running.Add(-1)
	pgid := cmd.Process.Pid
	// killAll ends the command and everything it started that stayed in
	// its group (a terminal's: its session).
	killAll := func() {
		killGroup(pgid, syscall.SIGKILL)
		if xio.master != nil {
			killSession(pgid, syscall.SIGKILL)
		}
	}

	send := &lockedSender{stream: stream}
	started := &sandpodv1.ExecStarted{Pid: int32(pgid), StdinWindow: StdinWindow}
	if err := send.send(&sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Started{Started: started}}); err != nil {
		killAll()
		_ = cmd.Wait()
		xio.closeOutput()
		return err
	}

	// Stdin goes through a feed so that reading the stream never waits on
	// the command reading its stdin (see stdinFeed).
	feed := newStdinFeed(StdinWindow)
	defer feed.drop()
	go feed.run(xio.stdin)
	stopAcks, acksDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(acksDone)
		feed.sendAcks(stopAcks, func(n int64) error {
			return send.send(&sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_StdinAcked{StdinAcked: n}})
		})
	}()
	endAcks := sync.OnceFunc(func() { close(stopAcks); <-acksDone })
	defer endAcks()

	var readers sync.WaitGroup
	var outTrunc, errTrunc bool
	readers.Add(1)
	go func() {
		defer readers.Done()
		outTrunc = pump(xio.stdout, maxOut, send, func(b []byte) *sandpodv1.ExecResponse {
			return &sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Stdout{Stdout: b}}
		})
	}()
	if xio.stderr != nil {
		readers.Add(1)
		go func() {
			defer readers.Done()
			errTrunc = pump(xio.stderr, maxOut, send, func(b []byte) *sandpodv1.ExecResponse {
				return &sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Stderr{Stderr: b}}
			})
		}()
	}

	// Client messages: stdin, close, signals, read as they arrive: stdin is
	// queued, so a signal behind it is acted on at once. A broken client
	// stream kills the whole process group: nobody is left to read its
	// output. So does a bad message, whose error ends the call.
	var finished atomic.Bool
	defer finished.Store(true)
	refused := make(chan error, 1)
	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) && !finished.Load() {
					killAll()
				}
				feed.close()
				return
			}
			switch m := msg.Msg.(type) {
			case *sandpodv1.ExecRequest_Stdin:
				feed.push(m.Stdin)
			case *sandpodv1.ExecRequest_CloseStdin:
				if xio.master == nil { // a terminal has no end of input but Ctrl-D
					feed.close()
				}
			case *sandpodv1.ExecRequest_Signal:
				xio.signal(pgid, syscall.Signal(m.Signal))
			case *sandpodv1.ExecRequest_Resize:
				if err := xio.resize(m.Resize); err != nil {
					refused <- err
					return
				}
			case *sandpodv1.ExecRequest_Start:
				refused <- errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidStream, "exec: only the first message may be start")
				return
			}
		}
	}()

	var timedOut bool
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var timeout <-chan time.Time
	if d := start.GetTimeout().AsDuration(); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-timeout:
		timedOut = true
		killAll()
		waitErr = <-waited
	case err := <-refused:
		killAll()
		<-waited
		xio.closeOutput()
		readers.Wait()
		return err
	case <-stream.Context().Done():
		killAll()
		<-waited
		xio.closeOutput()
		return status.FromContextError(stream.Context().Err()).Err()
	}
	if timedOut && xio.master == nil {
		// The whole tree is gone; nothing more will be written.
		readers.Wait()
	} else if !waitTimeout(&readers, drainGrace) {
		xio.closeOutput()
		readers.Wait()
	}
	xio.closeOutput()

	exit := exitStatus(cmd.ProcessState, waitErr)
	exit.TimedOut = timedOut
	exit.Duration = durationpb.New(time.Since(began))
	exit.StdoutTruncated, exit.StderrTruncated = outTrunc, errTrunc
	s.touch()
	endAcks() // the exit status is the last message
	return send.send(&sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Exit{Exit: exit}})
}

// command builds the process for an ExecStart, checking its arguments.
func (s *Server) command(start *sandpodv1.ExecStart) (*exec.Cmd, error) {
	argv := start.GetArgv()
	switch {
	case len(argv) > 0 && start.GetShell() != "":
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidCommand, "exec: give either argv or shell, not both")
	case len(argv) == 0 && start.GetShell() == "":
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidCommand, "exec: argv or shell is required")
	case len(argv) > 0 && argv[0] == "":
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidCommand, "exec: argv[0] (the program) is empty")
	case start.GetMaxOutputBytes() < 0 || start.GetMaxOutputBytes() > MaxMaxOutput:
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidValue, "exec: max_output_bytes must be between 0 and %d", MaxMaxOutput)
	case start.GetTimeout().AsDuration() < 0:
		return nil, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidDuration, "exec: timeout must not be negative")
	}
	if err := CheckPty(start.GetPty()); err != nil {
		return nil, errinfo.New(codes.InvalidArgument, errinfo.ReasonInvalidTerminal, map[string]string{"field": "pty"}, "exec: pty: "+err.Error())
	}
	if len(argv) == 0 {
		argv = []string{"/bin/sh", "-c", start.GetShell()}
	}
	dir, err := s.workingDir(start.GetWorkingDir())
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = mergeEnv(s.cfg.Env, start.GetEnv())
	// Its own process group, so a timeout or cancel kills the whole tree.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cfg.RunAs}
	if p := start.GetPty(); p != nil {
		term := p.GetTerm()
		if term == "" {
			term = DefaultTerm
		}
		cmd.Env = mergeEnv(mergeEnv(s.cfg.Env, map[string]string{"TERM": term}), start.GetEnv())
		// A session of its own with the terminal (its stdin, fd 0) as its
		// controlling terminal: job control and Ctrl-C work, and it has
		// nothing of the agent's.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Credential: s.cfg.RunAs}
	}
	return cmd, nil
}

func (s *Server) workingDir(p string) (string, error) {
	abs, err := s.path("exec: working_dir", p)
	if err != nil {
		return "", err
	}
	fi, err := s.root.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		// FAILED_PRECONDITION, not NOT_FOUND: the sandbox is there, and the
		// same call works once the directory exists (its state is wrong, not
		// the request); a NOT_FOUND from an exec means the sandbox is gone.
		return "", errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonWorkingDirNotFound, "exec: working_dir %q does not exist in the sandbox; create it first", p)
	}
	if err != nil {
		return "", fileError("exec: working_dir", p, err)
	}
	if !fi.IsDir() {
		return "", errinfo.Newf(codes.InvalidArgument, errinfo.ReasonNotADirectory, "exec: working_dir %q is not a directory", p)
	}
	return abs, nil
}

func startError(start *sandpodv1.ExecStart, cmd *exec.Cmd, err error) error {
	prog := start.GetShell()
	if len(start.GetArgv()) > 0 {
		prog = start.GetArgv()[0]
	}
	if len(prog) > 64 {
		prog = prog[:64] + "…"
	}
	if errors.Is(err, syscall.E2BIG) {
		n := 0
		for _, s := range append(cmd.Args, cmd.Env...) {
			n += len(s) + 1
		}
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidCommand, "exec: argv: the arguments and environment (%d bytes) are more than the kernel accepts (E2BIG); pass large data on stdin or in a file", n)
	}
	if dirGone(cmd) { // removed since workingDir looked
		return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonWorkingDirNotFound, "exec: working_dir %q does not exist in the sandbox; create it first", start.GetWorkingDir())
	}
	if errors.Is(err, syscall.EAGAIN) {
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonSandboxProcessLimit, "exec: sandbox process limit reached: %v", err)
	}
	return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonExecStartFailed, "exec: start %q: %v", prog, err)
}

// mergeEnv overlays extra on base ("K=V" pairs); extra wins.
func mergeEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				k = kv[:i]
				break
			}
		}
		if _, ok := extra[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// exitStatus always sets exit_code, 0 included: its presence is what makes
// a success read {"exitCode": 0} in JSON rather than nothing.
func exitStatus(ps *os.ProcessState, waitErr error) *sandpodv1.ExitStatus {
	if ps == nil {
		return &sandpodv1.ExitStatus{ExitCode: proto.Int32(-1)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &sandpodv1.ExitStatus{ExitCode: proto.Int32(-1), Signal: int32(ws.Signal())}
	}
	_ = waitErr // an *exec.ExitError carries the same state as ps
	return &sandpodv1.ExitStatus{ExitCode: proto.Int32(int32(ps.ExitCode()))}
}

func killGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}

// lockedSender serialises sends from the stdout and stderr pumps.
type lockedSender struct {
	mu     sync.Mutex
	stream sandpodv1.AgentService_ExecServer
	failed bool
}

func (l *lockedSender) send(m *sandpodv1.ExecResponse) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed {
		return fmt.Errorf("exec: stream already broken")
	}
	if err := l.stream.Send(m); err != nil {
		l.failed = true
		return err
	}
	return nil
}

// pump forwards r in chunks until EOF, keeping at most max bytes; it reports
// whether anything was dropped.
// bufPool recycles pump buffers: two per exec would otherwise be a large
// share of the agent's garbage.
var bufPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

func pump(r io.Reader, max int64, send *lockedSender, wrap func([]byte) *sandpodv1.ExecResponse) (truncated bool) {
	arr := bufPool.Get().(*[chunkSize]byte)
	defer bufPool.Put(arr)
	buf := arr[:]
	var sent int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			keep := int64(n)
			if room := max - sent; keep > room {
				keep = room
				truncated = true
			}
			if keep > 0 {
				chunk := make([]byte, keep)
				copy(chunk, buf[:keep])
				_ = send.send(wrap(chunk))
				sent += keep
			}
		}
		if err != nil {
			return truncated
		}
	}
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
