package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// execAll runs one exec to its end and returns its messages, or the error
// that ended the call.
func execAll(ctx context.Context, t *testing.T, client sandpodv1.AgentServiceClient, start *sandpodv1.ExecStart) ([]*sandpodv1.ExecResponse, error) {
	t.Helper()
	stream, err := client.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: start}}); err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	var msgs []*sandpodv1.ExecResponse
	for {
		m, err := stream.Recv()
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
		if m.GetExit() != nil {
			return msgs, nil
		}
	}
}

// A program that cannot run answers as `sh -c` would: started, a line on
// stderr, exit 127 (not found) or 126 (not executable); never NOT_FOUND,
// which means a missing sandbox.
func TestProgramThatCannotRunExitsLikeAShell(t *testing.T) {
	client, ctx, srv := startAgent(t)
	if err := os.WriteFile(filepath.Join(srv.cfg.Root, "data.txt"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srv.cfg.Root, "broken.sh"), []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv   []string
		code   int32
		stderr string
	}{
		{[]string{"no-such-prog", "arg"}, 127, `"no-such-prog": not found in PATH`},
		{[]string{"/no/such/program"}, 127, `"/no/such/program": no such file or directory`},
		{[]string{"./data.txt"}, 126, `"./data.txt": permission denied`},
		{[]string{"./broken.sh"}, 127, `"./broken.sh": its interpreter (#! line) or loader does not exist`},
	} {
		msgs, err := execAll(ctx, t, client, &sandpodv1.ExecStart{Argv: tc.argv})
		if err != nil {
			t.Errorf("%v: %v, want a process result", tc.argv, err)
			continue
		}
		if len(msgs) != 3 || msgs[0].GetStarted() == nil {
			t.Errorf("%v: messages %v, want started, stderr, exit", tc.argv, msgs)
			continue
		}
		if got := string(msgs[1].GetStderr()); !strings.Contains(got, tc.stderr) {
			t.Errorf("%v: stderr %q, want it to contain %q", tc.argv, got, tc.stderr)
		}
		if exit := msgs[2].GetExit(); exit.GetExitCode() != tc.code || exit.GetSignal() != 0 {
			t.Errorf("%v: exit %v, want code %d", tc.argv, exit, tc.code)
		}
	}

	// The shell agrees.
	msgs, err := execAll(ctx, t, client, &sandpodv1.ExecStart{Shell: "no-such-prog"})
	if err != nil || msgs[len(msgs)-1].GetExit().GetExitCode() != 127 {
		t.Errorf("sh -c no-such-prog: %v %v, want exit 127", msgs, err)
	}
}

// A working directory that does not exist is the sandbox's state, not a
// missing sandbox: FAILED_PRECONDITION.
func TestMissingWorkingDirIsFailedPrecondition(t *testing.T) {
	client, ctx, _ := startAgent(t)
	_, err := execAll(ctx, t, client, &sandpodv1.ExecStart{Shell: "true", WorkingDir: "nowhere"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), `"nowhere" does not exist`) {
		t.Errorf("missing working dir: %v, want FAILED_PRECONDITION naming it", err)
	}
}

// A missing file is NOT_FOUND with the reason FILE_NOT_FOUND, so clients
// tell it from a missing sandbox.
func TestMissingFileHasItsReason(t *testing.T) {
	client, ctx, _ := startAgent(t)
	_, err := client.StatFile(ctx, &sandpodv1.StatFileRequest{Path: "ghost.txt"})
	if status.Code(err) != codes.NotFound || errinfo.Reason(err) != errinfo.ReasonFileNotFound {
		t.Errorf("stat of a missing file: %v (reason %q), want NOT_FOUND %s", err, errinfo.Reason(err), errinfo.ReasonFileNotFound)
	}
}
