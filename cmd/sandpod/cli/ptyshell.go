package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// ptyShell is `sandpod shell` at a terminal: the shell runs on a
// pseudo-terminal in the sandbox, the local terminal is put in raw mode so
// every key (Ctrl-C, arrows, Tab) reaches the sandbox's own line editing,
// and a window change here resizes the remote terminal.
type ptyShell struct {
	a     *app
	sb    *sandpod.Sandbox
	shell string
	opts  []sandpod.ExecOption
	tty   *os.File
}

func (s *ptyShell) run(ctx context.Context) error {
	fd := int(s.tty.Fd())
	cols, rows, err := term.GetSize(fd)
	if err != nil {
		rows, cols = 24, 80
	}
	opts := append(s.opts[:len(s.opts):len(s.opts)], sandpod.WithPty(rows, cols), sandpod.WithStdout(s.a.out))
	p, err := s.sb.StartArgv(ctx, []string{s.shell}, opts...)
	if err != nil {
		return s.a.commandError(err)
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		_ = p.Kill()
		return exitErrorf(ExitError, "shell: cannot put the terminal in raw mode: %v", err)
	}
	defer func() { _ = term.Restore(fd, old) }()

	// Ctrl-C arrives as a byte in raw mode; SIGINT would only come from
	// outside (kill -INT), and then it is the remote shell's too.
	defer s.a.setSignalHandler(func(sig os.Signal) bool {
		return sig == syscall.SIGINT && p.Signal(syscall.SIGINT) == nil
	})()

	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for {
			select {
			case <-winch:
				if c, r, err := term.GetSize(fd); err == nil {
					_ = p.Resize(r, c)
				}
			case <-p.Done():
				return
			}
		}
	}()
	// The copy ends with the process: a read that is still waiting for a
	// key then is dropped with the program.
	go func() { _, _ = io.Copy(p.Stdin(), s.tty) }()

	res, err := p.Wait()
	if err != nil {
		return s.a.commandError(err)
	}
	return exitStatus(res, s.shell)
}
