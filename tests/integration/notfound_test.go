package integration

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// TestNotFoundSaysWhatIsMissing: NOT_FOUND about the sandbox itself, and
// only that, carries the reason SANDBOX_NOT_FOUND (the clients' "claim
// another one"); a missing file carries FILE_NOT_FOUND; a program that
// cannot run is a process result as in a shell; a missing working
// directory is FAILED_PRECONDITION.
func TestNotFoundSaysWhatIsMissing(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	sh(t, c, sb.Name, "echo data > plain.txt")

	gone := "ghost"
	sandboxCalls := map[string]func(t *testing.T) error{
		"get": func(t *testing.T) error {
			_, err := c.GetSandbox(ctx(t), &sandpodv1.GetSandboxRequest{Name: gone})
			return err
		},
		"suspend": func(t *testing.T) error {
			_, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: gone})
			return err
		},
		"delete": func(t *testing.T) error {
			_, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: gone})
			return err
		},
		"exec": func(t *testing.T) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: gone, Argv: []string{"no-such-program"}}, "")
			return err
		},
		"exec in another namespace": func(t *testing.T) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Namespace: "team-a", Shell: "true"}, "")
			return err
		},
		"read": func(t *testing.T) error {
			_, err := readFile(t, c, gone, "plain.txt")
			return err
		},
		"write": func(t *testing.T) error { return writeFile(t, c, gone, "x.txt", []byte("x")) },
		"stat": func(t *testing.T) error {
			_, err := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: gone, Path: "no-such-file"})
			return err
		},
	}
	for name, call := range sandboxCalls {
		t.Run("sandbox missing: "+name, func(t *testing.T) {
			wantReason(t, call(t), errinfo.ReasonSandboxNotFound)
		})
	}

	fileCalls := map[string]func(t *testing.T) error{
		"read": func(t *testing.T) error {
			_, err := readFile(t, c, sb.Name, "no-such-file")
			return err
		},
		"stat": func(t *testing.T) error {
			_, err := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: sb.Name, Path: "no-such-file"})
			return err
		},
		"list": func(t *testing.T) error {
			_, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb.Name, Path: "no-such-dir"})
			return err
		},
		"remove": func(t *testing.T) error {
			_, err := c.RemoveFile(ctx(t), &sandpodv1.RemoveFileRequest{Sandbox: sb.Name, Path: "no-such-file"})
			return err
		},
	}
	for name, call := range fileCalls {
		t.Run("file missing: "+name, func(t *testing.T) {
			wantReason(t, call(t), errinfo.ReasonFileNotFound)
		})
	}

	t.Run("template missing: no sandbox reason", func(t *testing.T) {
		_, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "nope"})
		wantCode(t, err, codes.NotFound, "nope")
		if r := errinfo.Reason(err); r == errinfo.ReasonSandboxNotFound {
			t.Errorf("a missing template says %s", r)
		}
	})

	t.Run("programs that cannot run exit as in a shell", func(t *testing.T) {
		for _, tc := range []struct {
			argv   []string
			code   int32
			stderr string
		}{
			{[]string{"no-such-program", "x"}, 127, `"no-such-program": not found in PATH`},
			{[]string{"/no/such/program"}, 127, `"/no/such/program": no such file or directory`},
			{[]string{"./plain.txt"}, 126, `"./plain.txt": permission denied`},
		} {
			r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Argv: tc.argv}, "")
			if err != nil {
				t.Errorf("%v: %v, want a process result", tc.argv, err)
				continue
			}
			if r.exit.GetExitCode() != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("%v: exit %v, stderr %q; want exit %d and %q", tc.argv, r.exit, r.stderr, tc.code, tc.stderr)
			}
		}
	})

	t.Run("working dir missing: FAILED_PRECONDITION", func(t *testing.T) {
		_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "true", WorkingDir: "nowhere"}, "")
		wantCode(t, err, codes.FailedPrecondition, `"nowhere" does not exist`)
		wantWhy(t, err, errinfo.ReasonWorkingDirNotFound)
	})

	t.Run("a deleted sandbox", func(t *testing.T) {
		other, _ := claim(t, c, "python")
		if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: other.Name}); err != nil {
			t.Fatal(err)
		}
		_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: other.Name, Shell: "true"}, "")
		wantReason(t, err, errinfo.ReasonSandboxNotFound)
		st := status.Convert(err)
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && (info.GetMetadata()["sandbox"] != other.Name || info.GetDomain() != errinfo.Domain) {
				t.Errorf("ErrorInfo %v, want domain %s and metadata sandbox=%s", info, errinfo.Domain, other.Name)
			}
		}
	})
}

// wantReason checks a NOT_FOUND and its ErrorInfo reason.
func wantReason(t *testing.T, err error, reason errinfo.Why) {
	t.Helper()
	if status.Code(err) != codes.NotFound || errinfo.Reason(err) != reason {
		t.Fatalf("got %v (reason %q), want NOT_FOUND with reason %s", err, errinfo.Reason(err), reason)
	}
}
