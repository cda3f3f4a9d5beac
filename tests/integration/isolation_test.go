package integration

import (
	"os"
	"strings"
	"testing"

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
		shared := sh(t, c, open.Name, probe)
		if strings.TrimSpace(shared.stdout) == "['lo']" {
			t.Fatalf("a template without egress None should share the host network, got %q", shared.stdout)
		}
		// Loopback inside works (brought up by the sandbox's init).
		r := sh(t, c, name, `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); c=socket.create_connection(s.getsockname()); print("ok")'`)
		if strings.TrimSpace(r.stdout) != "ok" {
			t.Fatalf("loopback in the isolated sandbox: %+v", r)
		}
	})

	t.Run("memory, cpu and pids limits are in the sandbox's cgroup", func(t *testing.T) {
		if _, err := os.Stat("/sys/fs/cgroup/memory/sandpod"); err != nil {
			t.Skip("no cgroup v1 memory hierarchy writable here; the engine runs without limits")
		}
		r := sh(t, c, name, `cg=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup); cat /sys/fs/cgroup/memory$cg/memory.limit_in_bytes;`+
			` cg=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup); cat /sys/fs/cgroup/pids$cg/pids.max;`+
			` cg=$(sed -n 's/^[0-9]*:cpu://p' /proc/self/cgroup); cat /sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us`)
		got := strings.Fields(r.stdout)
		want := []string{"268435456", "4096", "50000"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("limits %v (stderr %q), want memory/pids/cpu quota %v", got, r.stderr, want)
		}
	})
}
