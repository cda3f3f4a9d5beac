package cli

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// execFlags are the flags of exec and shell.
type execFlags struct {
	workdir string
	env     []string
	timeout string
}

func (f *execFlags) register(cmd *cobra.Command, withTimeout bool) {
	fl := cmd.Flags()
	fl.StringVarP(&f.workdir, "workdir", "w", "", "working directory (relative to /workspace, or absolute)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "environment KEY=VALUE (repeatable)")
	if withTimeout {
		fl.StringVar(&f.timeout, "timeout", "", "kill the command's process group after this long (exit code 124)")
	}
}

func (f *execFlags) options() ([]sandpod.ExecOption, error) {
	var opts []sandpod.ExecOption
	env, err := parsePairs("env", f.env)
	if err != nil {
		return nil, err
	}
	if env != nil {
		opts = append(opts, sandpod.WithEnv(env))
	}
	if f.workdir != "" {
		opts = append(opts, sandpod.WithDir(f.workdir))
	}
	if f.timeout != "" {
		d, err := parseDuration("--timeout", f.timeout)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sandpod.WithTimeout(d))
	}
	return opts, nil
}

func (a *app) execCommand() *cobra.Command {
	var (
		f     execFlags
		stdin string
	)
	cmd := &cobra.Command{
		Use:   "exec NAME -- COMMAND [ARG...]",
		Short: "run a command in a sandbox; its exit code is sandpod's",
		Long: `Run a program in the sandbox (no shell: use sh -c for one) and stream its
output. sandpod's flags go before --, the command and its arguments after
it. sandpod exits with the command's exit code, 128+N when a signal N
killed it, and 124 when --timeout did. Standard input is forwarded when it is
not a terminal (a pipe or a file); -i auto|always|never changes that. Ctrl-C
sends SIGINT to the command; a second Ctrl-C ends the call (and the command).`,
		Example: `  sandpod exec sb -- python3 -c 'print(6*7)'
  sandpod exec sb -w project -e DEBUG=1 -- make test
  echo hello | sandpod exec sb -- wc -c
  sandpod exec sb -- sh -c 'cd /tmp && ls | head'`,
		Args:              minArgs(2, "NAME and a COMMAND (sandpod exec NAME -- COMMAND [ARG...])"),
		ValidArgsFunction: a.completeFirstSandbox,
		RunE: func(cmd *cobra.Command, args []string) error {
			argv := args[1:]
			if dash := cmd.ArgsLenAtDash(); dash > 1 {
				return usageErrorf("exec takes one NAME before -- (got %q)", args[:dash])
			} else if dash == 0 {
				return usageErrorf("exec needs a sandbox NAME before -- (sandpod exec NAME -- COMMAND [ARG...])")
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			forward, err := a.forwardStdin(stdin)
			if err != nil {
				return err
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			return a.exec(cmd.Context(), c.Sandbox(args[0]), argv, forward, opts)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageErrorf("%v (the command and its flags go after --: sandpod exec NAME -- COMMAND [ARG...])", err)
	})
	f.register(cmd, true)
	cmd.Flags().StringVarP(&stdin, "stdin", "i", "auto", "forward standard input: auto (when not a terminal), always, never")
	_ = cmd.RegisterFlagCompletionFunc("stdin", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) forwardStdin(mode string) (bool, error) {
	switch mode {
	case "auto":
		return !isTerminal(a.in), nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, usageErrorf("--stdin %q: use auto, always or never", mode)
}

// exec runs argv and turns how it ended into sandpod's exit code.
func (a *app) exec(ctx context.Context, sb *sandpod.Sandbox, argv []string, forward bool, opts []sandpod.ExecOption) error {
	opts = append(opts, sandpod.WithStdout(a.out), sandpod.WithStderr(a.err))
	if forward {
		opts = append(opts, sandpod.WithStdin(a.in))
	}
	p, err := sb.StartArgv(ctx, argv, opts...)
	if err != nil {
		return a.commandError(err)
	}
	if !forward {
		_ = p.Stdin().Close()
	}
	defer a.setSignalHandler(forwardSignals(p))()
	res, err := p.Wait()
	if err != nil {
		return a.commandError(err)
	}
	return exitStatus(res, argv[0])
}

// forwardSignals sends the first Ctrl-C (and any SIGTERM) to the command's
// process group; a second Ctrl-C within two seconds ends the call.
func forwardSignals(p *sandpod.Process) func(os.Signal) bool {
	var last atomic.Int64
	return func(s os.Signal) bool {
		sig, _ := s.(syscall.Signal)
		if sig == syscall.SIGINT {
			now := time.Now().UnixNano()
			if prev := last.Swap(now); prev != 0 && time.Duration(now-prev) < 2*time.Second {
				return false
			}
		}
		return p.Signal(sig) == nil
	}
}

// exitStatus is the exit code of a finished command: its own, 128+N for a
// signal N, 124 for its timeout (a line on stderr says which of the last
// two it was).
func exitStatus(res *sandpod.Result, name string) error {
	switch {
	case res.TimedOut:
		return exitErrorf(ExitTimeout, "exec: %s timed out (--timeout) and was killed", name)
	case res.Signal != 0:
		return exitErrorf(128+res.Signal, "exec: %s was killed by signal %d (%s)", name, res.Signal, syscall.Signal(res.Signal))
	case res.ExitCode != 0:
		return &codeError{code: res.ExitCode}
	}
	return nil
}
