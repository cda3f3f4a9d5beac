package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Exit statuses a POSIX shell gives a command it cannot run.
const (
	exitNotFound      = 127
	exitNotExecutable = 126
)

// notRunnable recognises a program that cannot be started for a reason a
// shell reports as the command's exit status: not found (127) or not
// executable (126). why is the line for its stderr.
//
// Such an exec is a command that failed, not a call that failed: `sh -c
// no-such-prog` has always answered 127, so argv answers the same, code
// that checks exit codes sees one rule for both, and an exec's NOT_FOUND
// keeps one meaning, that the sandbox is gone (a client that catches it to
// claim a new sandbox must not do so for a typo in a program name).
func notRunnable(cmd *exec.Cmd, err error) (code int32, why string, ok bool) {
	if dirGone(cmd) {
		return 0, "", false // the working directory failed, not the program
	}
	prog := cmd.Args[0]
	if len(prog) > 256 {
		prog = prog[:256] + "…"
	}
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return exitNotFound, fmt.Sprintf("sandpod: exec %q: not found in PATH (%s)\n", prog, os.Getenv("PATH")), true
	case errors.Is(err, fs.ErrNotExist):
		if path := cmd.Path; path != "" {
			if !filepath.IsAbs(path) {
				path = filepath.Join(cmd.Dir, path)
			}
			if _, serr := os.Stat(path); serr == nil {
				// execve's ENOENT for a file that exists: what it needs to
				// run is missing.
				return exitNotFound, fmt.Sprintf("sandpod: exec %q: its interpreter (#! line) or loader does not exist\n", prog), true
			}
		}
		return exitNotFound, fmt.Sprintf("sandpod: exec %q: no such file or directory\n", prog), true
	case errors.Is(err, fs.ErrPermission):
		return exitNotExecutable, fmt.Sprintf("sandpod: exec %q: permission denied (not an executable file)\n", prog), true
	}
	return 0, "", false
}

// dirGone reports whether the command's working directory no longer
// exists: the child's chdir fails with the same ENOENT as a missing
// program, so a directory removed after workingDir checked it would
// otherwise pass for one.
func dirGone(cmd *exec.Cmd) bool {
	if cmd.Dir == "" {
		return false
	}
	_, err := os.Stat(cmd.Dir)
	return errors.Is(err, fs.ErrNotExist)
}

// shellLikeExit answers an exec whose program could not run as a command
// that ran and failed: started (pid 0: there is no process), the reason on
// stderr, then the exit status.
func shellLikeExit(stream sandpodv1.AgentService_ExecServer, code int32, why string, began time.Time) error {
	msgs := []*sandpodv1.ExecResponse{
		{Msg: &sandpodv1.ExecResponse_Started{Started: &sandpodv1.ExecStarted{StdinWindow: StdinWindow}}},
		{Msg: &sandpodv1.ExecResponse_Stderr{Stderr: []byte(why)}},
		{Msg: &sandpodv1.ExecResponse_Exit{Exit: &sandpodv1.ExitStatus{ExitCode: proto.Int32(code), Duration: durationpb.New(time.Since(began))}}},
	}
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return nil
}
