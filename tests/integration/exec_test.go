package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestExec(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")

	t.Run("stdout, stderr and exit code", func(t *testing.T) {
		r := sh(t, c, sb.Name, "echo out; echo err >&2; exit 7")
		if r.stdout != "out\n" || r.stderr != "err\n" || r.exit.GetExitCode() != 7 {
			t.Fatalf("got %+v", r)
		}
		if r.exit.GetDuration().AsDuration() <= 0 {
			t.Errorf("duration not reported")
		}
	})
	// What grpcurl prints: proto3 JSON leaves out a plain int32 that is 0,
	// so a success must carry exit_code with explicit presence.
	t.Run("a success reads exitCode 0 in JSON", func(t *testing.T) {
		r := sh(t, c, sb.Name, "true")
		b, err := protojson.Marshal(r.exit)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		if code, ok := fields["exitCode"]; !ok || code != 0.0 {
			t.Fatalf("exit status of `true` in JSON: %s, want exitCode 0", b)
		}
	})
	t.Run("python runs inside", func(t *testing.T) {
		r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Argv: []string{"python3", "-c", "import sys; print(sum(range(10)), file=sys.stdout)"}}, "")
		if err != nil || strings.TrimSpace(r.stdout) != "45" {
			t.Fatalf("python: %+v %v", r, err)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Argv: []string{"wc", "-c"}}, "12345")
		if err != nil || strings.TrimSpace(r.stdout) != "5" {
			t.Fatalf("wc: %+v %v", r, err)
		}
	})
	t.Run("env and working dir", func(t *testing.T) {
		sh(t, c, sb.Name, "mkdir -p sub")
		r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "echo $GREETING; pwd", Env: map[string]string{"GREETING": "hi"}, WorkingDir: "sub"}, "")
		if err != nil || !strings.HasPrefix(r.stdout, "hi\n") || !strings.HasSuffix(strings.TrimSpace(r.stdout), "/sub") {
			t.Fatalf("got %+v %v", r, err)
		}
	})
	t.Run("timeout kills the whole process tree", func(t *testing.T) {
		r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "sleep 1000 & echo $! > child.pid; sleep 1000", Timeout: dur(500 * time.Millisecond)}, "")
		if err != nil {
			t.Fatal(err)
		}
		if !r.exit.GetTimedOut() || r.exit.GetSignal() != 9 {
			t.Fatalf("want timed out by SIGKILL, got %+v", r.exit)
		}
		alive := sh(t, c, sb.Name, `kill -0 $(cat child.pid) 2>/dev/null && echo alive || echo gone`)
		if strings.TrimSpace(alive.stdout) != "gone" {
			t.Fatalf("background child survived the timeout: %q", alive.stdout)
		}
	})
	t.Run("output cap sets the truncated flag", func(t *testing.T) {
		r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "head -c 100000 /dev/zero", MaxOutputBytes: 1000}, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.stdout) != 1000 || !r.exit.GetStdoutTruncated() || r.exit.GetStderrTruncated() {
			t.Fatalf("got %d bytes, exit %+v", len(r.stdout), r.exit)
		}
	})
	t.Run("a missing program exits 127, as in a shell", func(t *testing.T) {
		for _, start := range []*sandpodv1.ExecStart{
			{Sandbox: sb.Name, Argv: []string{"no-such-program-xyz"}},
			{Sandbox: sb.Name, Shell: "no-such-program-xyz"},
		} {
			r, err := execIn(t, c, start, "")
			if err != nil || r.exit.GetExitCode() != 127 || !strings.Contains(r.stderr, "no-such-program-xyz") || !strings.Contains(r.stderr, "not found") {
				t.Errorf("%v: %+v, %v; want exit 127 and stderr naming the program", start, r, err)
			}
		}
	})
	t.Run("the host file system is read-only, the work dir is not", func(t *testing.T) {
		r := sh(t, c, sb.Name, "touch /usr/sandpod-test 2>&1; echo ok > mine.txt && cat mine.txt")
		if !strings.Contains(r.stdout, "Read-only file system") || !strings.HasSuffix(r.stdout, "ok\n") {
			t.Fatalf("got %q", r.stdout)
		}
	})
	t.Run("own pid namespace and hostname", func(t *testing.T) {
		r := sh(t, c, sb.Name, "echo $$ $(hostname); ls /proc | grep -c '^[0-9]'")
		lines := strings.Fields(r.stdout)
		if len(lines) != 3 || lines[1] != sb.Name {
			t.Fatalf("got %q", r.stdout)
		}
	})
}
