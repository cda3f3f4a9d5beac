package agent

import (
	"io"
	"os"
	"os/exec"
	"syscall"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// execIO is how an exec talks to its command: pipes, or a terminal.
type execIO struct {
	stdin  io.WriteCloser
	stdout *os.File
	stderr *os.File // nil for a terminal: one stream
	// child holds the command's ends, closed once it has started.
	child []*os.File
	// master is the terminal's master end, nil for pipes.
	master *os.File
}

func pipeIO(cmd *exec.Cmd) (execIO, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return execIO{}, errinfo.Newf(codes.Internal, errinfo.ReasonExecPipeFailed, "exec: stdin pipe: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return execIO{}, errinfo.Newf(codes.Internal, errinfo.ReasonExecPipeFailed, "exec: stdout pipe: %v", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return execIO{}, errinfo.Newf(codes.Internal, errinfo.ReasonExecPipeFailed, "exec: stderr pipe: %v", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	return execIO{stdin: stdin, stdout: outR, stderr: errR, child: []*os.File{outW, errW}}, nil
}

// ptyIO gives the command a new terminal as stdin, stdout and stderr.
// Stdin goes to the master as typed; what the terminal shows (output and
// echo) comes back as stdout.
func (s *Server) ptyIO(cmd *exec.Cmd, size *sandpodv1.TerminalSize) (execIO, error) {
	master, slave, err := openPTY(uint16(size.GetRows()), uint16(size.GetCols()), s.cfg.RunAs)
	if err != nil {
		return execIO{}, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonTerminalUnavailable, "exec: pty: the sandbox gives no terminal: %v", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// The stdin feed closes its writer at the end of input: that must not
	// hang the terminal up, so it gets the master without its Close.
	return execIO{stdin: noClose{master}, stdout: master, child: []*os.File{slave}, master: master}, nil
}

type noClose struct{ io.Writer }

func (noClose) Close() error { return nil }

// started closes the agent's copies of the command's ends, so that the
// output reads end when the command (and what it started) closes them.
func (x execIO) started() {
	for _, f := range x.child {
		f.Close()
	}
}

// abort closes everything of a command that did not start.
func (x execIO) abort() {
	x.started()
	x.stdin.Close()
	x.closeOutput()
}

func (x execIO) closeOutput() {
	x.stdout.Close()
	if x.stderr != nil {
		x.stderr.Close()
	}
}

// signal sends a client's signal: to the command's process group, and on a
// terminal also to its foreground group (where a shell runs the current
// job), as a key such as Ctrl-C would.
func (x execIO) signal(pgid int, sig syscall.Signal) {
	killGroup(pgid, sig)
	if x.master != nil {
		if fg := foregroundGroup(x.master); fg > 0 && fg != pgid {
			killGroup(fg, sig)
		}
	}
}

func (x execIO) resize(sz *sandpodv1.TerminalSize) error {
	if x.master == nil {
		return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonNoTerminal, "exec: %s", ErrNoTerminal)
	}
	if err := CheckTerminalSize(sz); err != nil {
		return errinfo.New(codes.InvalidArgument, errinfo.ReasonInvalidTerminal, map[string]string{"field": "resize"}, "exec: resize: "+err.Error())
	}
	if err := resizePTY(x.master, uint16(sz.GetRows()), uint16(sz.GetCols())); err != nil {
		return errinfo.Newf(codes.Internal, errinfo.ReasonTerminalResizeFailed, "exec: resize: %v", err)
	}
	return nil
}
