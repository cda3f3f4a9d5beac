package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func (a *app) shellCommand() *cobra.Command {
	var (
		f     execFlags
		shell string
	)
	cmd := &cobra.Command{
		Use:   "shell NAME",
		Short: "a shell in a sandbox (line mode: one command line at a time)",
		Long: `Open a shell in the sandbox. Each line you type runs in one persistent shell
process, so cd, variables and functions carry over from line to line, and
sandpod prints its output. A line that does not complete a command (an open
if, for or quote) waits for the next one, behind a "> " prompt.

This is line mode, until the API's exec gains a terminal (PTY): commands get
an empty standard input and no terminal, so editors, pagers and REPLs do not
work; use exec with a pipe to feed a command input. Ctrl-C interrupts the
running command, Ctrl-D or exit ends the shell, and sandpod exits with the
shell's exit status.`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.completeSandboxes,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			s := a.newShellSession(c.Sandbox(args[0]), shell, opts)
			return s.run(cmd.Context())
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&shell, "shell", "/bin/sh", "the POSIX shell to run")
	return cmd
}

// shellSession is one `sandpod shell`. lineShell is the only kind until
// Exec has a PTY (the issue on code and terminals); then a PTY session
// (raw terminal, window size, the sandbox's own prompt and line editing)
// takes over when stdin is a terminal, and lineShell stays for pipes.
type shellSession interface {
	run(ctx context.Context) error
}

func (a *app) newShellSession(sb *sandpod.Sandbox, shell string, opts []sandpod.ExecOption) shellSession {
	return &lineShell{a: a, sb: sb, shell: shell, opts: opts, prompts: isTerminal(a.in)}
}

// lineShell runs one shell process with its stdin open and feeds it the
// lines read here. After each complete command the shell prints a marker
// line with the command's status (stripped from the output), which is
// what tells the session to show the next prompt.
type lineShell struct {
	a       *app
	sb      *sandpod.Sandbox
	shell   string
	opts    []sandpod.ExecOption
	prompts bool // print prompts (stdin is a terminal)
}

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shellQuote quotes s for a POSIX shell: in single quotes, each quote in s
// closing them, escaped, and opening them again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lineScript is what the session sends for the command text src (one or
// more lines). It first has the shell parse src without running it (sh
// -n), because a syntax error in an eval ends a non-interactive shell: an
// error about the end of the input means the command is incomplete
// ("more"); another is shown (status 2); else src runs, with an empty
// stdin so that a command that reads stdin does not swallow the session's
// next lines.
func lineScript(shell, src, marker string) string {
	m := shellQuote(marker)
	return "__sp_src=" + shellQuote(src) + "\n" +
		"if __sp_err=$(printf '%s\\n' \"$__sp_src\" | " + shellQuote(shell) + " -n 2>&1); then " +
		"eval \"$__sp_src\" </dev/null; printf '%s%s\\n' " + m + " \"$?\"; " +
		"else case $__sp_err in *'end of file'*|*'nterminated'*|*'unexpected EOF'*) printf '%s%s\\n' " + m + " more;; " +
		"*) printf '%s\\n' \"$__sp_err\" >&2; printf '%s%s\\n' " + m + " 2;; esac; fi\n"
}

func (s *lineShell) run(ctx context.Context) error {
	a := s.a
	marker := "\x1esandpod-" + newToken() + " "
	statuses := make(chan string, 16)
	out := &markerWriter{out: a.out, marker: []byte(marker), found: func(st string) { statuses <- st }}
	opts := append(s.opts[:len(s.opts):len(s.opts)], sandpod.WithStdout(out), sandpod.WithStderr(a.err))
	p, err := s.sb.StartArgv(ctx, []string{s.shell}, opts...)
	if err != nil {
		return a.commandError(err)
	}
	stdin := p.Stdin()
	// The shell survives Ctrl-C (its trap runs after the command it
	// interrupts); the commands it starts get SIGINT's default back.
	if _, err := io.WriteString(stdin, "trap : INT\n"); err != nil {
		return s.finish(p)
	}

	var running atomic.Bool
	interrupts := make(chan struct{}, 1)
	defer a.setSignalHandler(func(sig os.Signal) bool {
		if sig != syscall.SIGINT {
			return false
		}
		if running.Load() {
			_ = p.Signal(syscall.SIGINT)
			return true
		}
		select {
		case interrupts <- struct{}{}:
		default:
		}
		return true
	})()

	lines := make(chan string)
	go readLines(a.in, lines)
	var buf strings.Builder
	last := "0"
	s.prompt(false)
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-interrupts:
			buf.Reset()
			if s.prompts {
				fmt.Fprintln(a.err)
			}
			s.prompt(false)
			continue
		case <-p.Done():
			return s.finish(p)
		}
		if !ok {
			// End of input: leave with the last command's status.
			_, _ = io.WriteString(stdin, "exit "+last+"\n")
			_ = stdin.Close()
			return s.finish(p)
		}
		if buf.Len() == 0 && strings.TrimSpace(line) == "" {
			s.prompt(false)
			continue
		}
		buf.WriteString(strings.TrimSuffix(line, "\n") + "\n")
		running.Store(true)
		_, err := io.WriteString(stdin, lineScript(s.shell, buf.String(), marker))
		if err != nil {
			return s.finish(p)
		}
		var st string
		select {
		case st = <-statuses:
		case <-p.Done():
			return s.finish(p)
		}
		running.Store(false)
		if st == "more" {
			s.prompt(true)
			continue
		}
		buf.Reset()
		if _, err := strconv.Atoi(st); err == nil {
			last = st // it goes back into the shell as "exit <last>"
		}
		s.prompt(false)
	}
}

// prompt shows the prompt of a new command ("NAME$ ") or of a command's
// next line ("> "), on a terminal only.
func (s *lineShell) prompt(more bool) {
	if !s.prompts {
		return
	}
	if more {
		fmt.Fprint(s.a.err, "> ")
		return
	}
	fmt.Fprintf(s.a.err, "%s$ ", s.sb.Name())
}

// finish waits for the shell and returns its exit status as sandpod's.
func (s *lineShell) finish(p *sandpod.Process) error {
	res, err := p.Wait()
	if err != nil {
		return s.a.commandError(err)
	}
	if s.prompts {
		fmt.Fprintln(s.a.err)
	}
	return exitStatus(res, s.shell)
}

// readLines sends each line of r (with its newline) and closes ch at the
// end of r.
func readLines(r io.Reader, ch chan<- string) {
	defer close(ch)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			ch <- line
		}
		if err != nil {
			return
		}
	}
}

// markerWriter passes a stream through, minus the marker lines (marker,
// then a status word, then a newline), whose words it hands to found in
// order. A marker split across writes is held back until it is whole.
type markerWriter struct {
	out     io.Writer
	marker  []byte
	found   func(string)
	pending []byte
}

func (m *markerWriter) Write(b []byte) (int, error) {
	m.pending = append(m.pending, b...)
	for {
		i := bytes.Index(m.pending, m.marker)
		if i < 0 {
			break
		}
		if err := m.emit(m.pending[:i]); err != nil {
			return 0, err
		}
		rest := m.pending[i+len(m.marker):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			m.pending = append([]byte(nil), m.pending[i:]...)
			return len(b), nil
		}
		m.found(string(rest[:j]))
		m.pending = append([]byte(nil), rest[j+1:]...)
	}
	k := heldBack(m.pending, m.marker)
	if err := m.emit(m.pending[:len(m.pending)-k]); err != nil {
		return 0, err
	}
	m.pending = append([]byte(nil), m.pending[len(m.pending)-k:]...)
	return len(b), nil
}

func (m *markerWriter) emit(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := m.out.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// heldBack is the length of the longest end of b that begins marker.
func heldBack(b, marker []byte) int {
	for k := min(len(b), len(marker)-1); k > 0; k-- {
		if bytes.Equal(b[len(b)-k:], marker[:k]) {
			return k
		}
	}
	return 0
}
