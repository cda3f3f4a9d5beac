package integration

import (
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// restart_on_failure is each sandbox's choice over the engine's agentRestart
// policy: false leaves a crashed sandbox FAILED even under policy Always,
// true restarts it (same uid, same files) even under policy Never.
func TestRestartOnFailureOverridesTheEnginePolicy(t *testing.T) {
	neverConfig := strings.Replace(fastHealthConfig, "policy: Always", "policy: Never", 1)
	for _, tc := range []struct {
		name        string
		config      string
		restart     bool
		wantRestart bool
	}{
		{"off under Always", fastHealthConfig, false, false},
		{"on under Never", neverConfig, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, tc.config)
			c := srv.Client()
			resp, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", RestartOnFailure: proto.Bool(tc.restart)})
			if err != nil {
				t.Fatal(err)
			}
			sb := resp.GetSandbox()
			sh(t, c, sb.Name, "echo kept > f.txt")
			if err := syscall.Kill(agentPID(t, sb.Name), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if !tc.wantRestart {
				eventually(t, "the sandbox FAILED", func() bool {
					got, _ := getSandbox(t, c, sb.Name)
					return got.GetPhase() == sandpodv1.Phase_PHASE_FAILED
				})
				if got, _ := getSandbox(t, c, sb.Name); got.GetAgentRestarts() != 0 {
					t.Fatalf("agent_restarts = %d, want 0 (%s)", got.GetAgentRestarts(), got.GetMessage())
				}
				return
			}
			got := waitRestarted(t, c, sb.Name, 1)
			if got.GetUid() != sb.Uid {
				t.Fatalf("the restarted sandbox has another uid: %s, was %s", got.GetUid(), sb.Uid)
			}
			if r := sh(t, c, sb.Name, "cat f.txt"); r.stdout != "kept\n" {
				t.Fatalf("files after the restart: %q", r.stdout)
			}
		})
	}
}
