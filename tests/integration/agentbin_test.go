package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// smallAgent is the agent binary serve finds beside the sandpod binary
// under test: bin/sandpod runs bin/sandpod-agent, bin/sandpod-race runs
// bin/sandpod-agent-race (make build and make build-race build both).
func smallAgent(t *testing.T) string {
	t.Helper()
	bin := testserver.Binary(t)
	p := filepath.Join(filepath.Dir(bin), "sandpod-agent"+strings.TrimPrefix(filepath.Base(bin), "sandpod"))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("precondition: the agent binary beside %s: %v (make build builds it)", bin, err)
	}
	return p
}

// agentMount is the mount options of the agent binary's mount in pid's
// mount namespace (its line of /proc/<pid>/mountinfo).
func agentMount(t *testing.T, pid int) []string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 5 && fields[4] == "/.sandpod/sandpod" {
			return strings.Split(fields[5], ",")
		}
	}
	t.Fatalf("no mount at /.sandpod/sandpod in the mount namespace of pid %d", pid)
	return nil
}

// The init and the agent of a sandbox run the small agent binary, one file
// on the host shared by every sandbox and mounted read-only into each; the
// engine's own binary (Kubernetes client, gateway, CLI, store) is not run.
func TestSandboxRunsTheSmallAgentReadOnly(t *testing.T) {
	want := smallAgent(t)
	wantFI, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	serveFI, err := os.Stat(testserver.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, defaultConfig)
	c := srv.Client()
	a, _ := claim(t, c, "python")
	b, _ := claim(t, c, "python")
	for _, name := range []string{a.GetName(), b.GetName()} {
		for _, pid := range []int{initPID(t, name), agentPID(t, name)} {
			got, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(got, wantFI) {
				same := ""
				if os.SameFile(got, serveFI) {
					same = " (the whole sandpod binary)"
				}
				t.Errorf("sandbox %s: pid %d runs another file than %s%s", name, pid, want, same)
			}
		}
		if opts := agentMount(t, initPID(t, name)); !contains(opts, "ro") {
			t.Errorf("sandbox %s: the agent binary is mounted with %v, want ro", name, opts)
		}
	}
	// And from inside: the sandbox's root cannot change it.
	r := sh(t, c, a.GetName(), `grep ' /.sandpod/sandpod ' /proc/self/mountinfo | cut -d' ' -f6`)
	if !contains(strings.Split(strings.TrimSpace(r.stdout), ","), "ro") {
		t.Errorf("inside the sandbox the agent's mount options are %q, want ro", r.stdout)
	}
}

// `sandpod agent` stays an agent: serve --agent naming the whole binary runs
// every sandbox with it, as engines did before cmd/sandpod-agent.
func TestServeRunsTheWholeBinaryAsAgentWhenAsked(t *testing.T) {
	full := testserver.Binary(t)
	srv := testserver.Start(t, testserver.Options{ExtraArgs: []string{"--agent", full}})
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	got, err := os.Stat(fmt.Sprintf("/proc/%d/exe", agentPID(t, sb.GetName())))
	if err != nil {
		t.Fatal(err)
	}
	fullFI, err := os.Stat(full)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(got, fullFI) {
		t.Fatalf("the agent does not run %s", full)
	}
	if r := sh(t, c, sb.GetName(), "echo hello"); r.exit.GetExitCode() != 0 || r.stdout != "hello\n" {
		t.Fatalf("exec through `sandpod agent`: %+v", r)
	}
	_, err = c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: sb.GetName()})
	if err != nil {
		t.Fatal(err)
	}
}
