package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

const limitedConfig = `apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: limited
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
        resources:
          limits:
            memory: 256Mi
            cpu: 500m
  networkPolicy:
    egress: None
`

func TestTemplateLimitsAndNetworkIsolation(t *testing.T) {
	srv := startServer(t, testserverDefaultPlus(limitedConfig))
	c := srv.Client()
	cr, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "limited"})
	if err != nil {
		t.Fatal(err)
	}
	name := cr.GetSandbox().GetName()
	open, _ := claim(t, c, "python")

	t.Run("egress None gives a network namespace with only loopback", func(t *testing.T) {
		probe := `python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))'`
		isolated := sh(t, c, name, probe)
		if strings.TrimSpace(isolated.stdout) != "['lo']" {
			t.Fatalf("isolated sandbox sees interfaces %q", isolated.stdout)
		}
		own := sh(t, c, open.Name, probe)
		if strings.TrimSpace(own.stdout) == "['lo']" {
			t.Fatalf("a template with egress should have a network beside loopback, got %q", own.stdout)
		}
		// Loopback inside works (brought up by the sandbox's init).
		r := sh(t, c, name, `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); c=socket.create_connection(s.getsockname()); print("ok")'`)
		if strings.TrimSpace(r.stdout) != "ok" {
			t.Fatalf("loopback in the isolated sandbox: %+v", r)
		}
	})

	t.Run("memory, cpu and pids limits are in the sandbox's cgroup", func(t *testing.T) {
		// Read on the host, in the layout serve reported (inside, the
		// sandbox has its own cgroup namespace and no /sys).
		layout := limitsLayout(t, srv)
		got := sandboxLimits(t, srv, name)
		want := wantLimits(layout, 256<<20, 500, 4096, hasSwapAccounting())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("cgroup %s limit files %v, want %v", layout, got, want)
		}
		if r := sh(t, c, name, "cat /proc/self/cgroup"); strings.Contains(r.stdout, "sandpod") {
			t.Fatalf("the sandbox sees the host's cgroup paths: %q", r.stdout)
		}
	})
}

func TestSandboxCannotSeeTheEngineState(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	a, _ := claim(t, c, "python")
	b, _ := claim(t, c, "python")
	sh(t, c, b.Name, "echo private > secret-of-b.txt")

	state := srv.StateDir()
	r := sh(t, c, a.Name, "ls -A "+state+"; ls "+state+"/sandboxes/default/"+b.Name+"/work 2>&1; tr '\\0' '\\n' < /proc/1/environ | grep -c SANDPOD || true")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if strings.Contains(r.stdout, "state.db") || strings.Contains(r.stdout, "secret-of-b") {
		t.Fatalf("sandbox %s sees the engine's state or another sandbox's files:\n%s", a.Name, r.stdout)
	}
	if last := lines[len(lines)-1]; last != "0" {
		t.Fatalf("the agent's environment carries SANDPOD_ variables (%s)", last)
	}
	// Its own work directory is still there, writable.
	if r := sh(t, c, a.Name, "echo mine > own.txt && cat own.txt"); r.stdout != "mine\n" {
		t.Fatalf("own work dir: %+v", r)
	}
}

func TestAgentRefusesCallsWithoutTheSecret(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	// Every agent socket of this server, dialled without the secret.
	socks, _ := filepath.Glob(filepath.Join(os.TempDir(), "sandpod-*", "*.sock"))
	tried := 0
	for _, s := range socks {
		conn, err := grpc.NewClient("unix://"+s, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			continue
		}
		_, err = sandpodv1.NewAgentServiceClient(conn).GetAgentInfo(ctx(t), &sandpodv1.GetAgentInfoRequest{})
		conn.Close()
		if status.Code(err) == codes.Unavailable {
			continue // a stale socket of another run
		}
		tried++
		wantCode(t, err, codes.Unauthenticated, "secret")
	}
	if tried == 0 {
		t.Fatalf("found no live agent socket for %s among %d", sb.Name, len(socks))
	}
}
