package integration

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sandpod/sandpod/tests/testserver"
)

// cappedConfig is a template with a memory limit and loopback only.
const cappedConfig = `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: capped
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
        resources:
          limits: {memory: 128Mi}
  networkPolicy: {egress: None}
`

// The kernel memory a sandbox's sockets hold in their queues is the
// sandbox's, not the host's: on cgroup v1 it was charged to no cgroup, so
// loopback connections that are never read held the host's one TCP budget
// (tcp_mem), whose ceiling stalls every TCP connection of the machine, far
// past the sandbox's memory limit. The sandbox here queues data on up to 64
// connections it never reads (each buffer at its largest) until it has
// twice its 128 MiB limit queued, or no more goes.
func TestSocketBuffersAreChargedToTheSandbox(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: cappedConfig})
	name := createSandbox(t, srv, "capped")
	const limit = 128 << 20
	probe := `python3 - <<'PY'
import socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(128)
conns, total = [], 0
for i in range(64):
    try:
        c = socket.socket(); c.settimeout(5)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
        c.connect(srv.getsockname())
        srv.settimeout(5)
        s, _ = srv.accept()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
    except OSError as e:
        print("connect stopped:", e)
        break
    c.setblocking(False)
    sent = 0
    while True:
        try:
            sent += c.send(b"x" * 65536)
        except (BlockingIOError, OSError):
            break
    conns.append((c, s))
    total += sent
    if total >= ` + strconv.Itoa(2*limit) + ` or (i >= 8 and sent == 0):
        break
print("queued", total)
PY`
	r := sh(t, srv.Client(), name, probe)
	var queued int
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "queued "); ok {
			queued, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if r.exit.GetExitCode() != 0 || queued == 0 {
		t.Fatalf("probe: %q %q", r.stdout, r.stderr)
	}
	// What is queued is charged at least once (the sender's or the
	// receiver's queue); a little more than the limit for what was in
	// flight when it was reached.
	if queued > limit+limit/4 {
		t.Fatalf("a sandbox limited to %d MiB queued %d MiB in its sockets: its socket buffers are not charged to it", limit>>20, queued>>20)
	}
	t.Logf("queued %d MiB (memory limit %d MiB)", queued>>20, limit>>20)
}
