package integration

import (
	"os"
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
	const limit, conns = 128 << 20, 64
	// The probe asks for the largest buffers, which the kernel caps at
	// twice net.core.wmem_max (rmem_max): with Linux's defaults (208 KiB)
	// 64 connections hold ~53 MiB, under the limit whether charged or not.
	// The test raises the caps (host-wide, restored after) until an
	// uncharged sandbox could queue twice its limit.
	for _, f := range []string{"/proc/sys/net/core/wmem_max", "/proc/sys/net/core/rmem_max"} {
		atLeast(t, f, 2*limit/conns/4)
	}
	srv := testserver.Start(t, testserver.Options{Config: cappedConfig})
	name := createSandbox(t, srv, "capped")
	probe := `python3 - <<'PY'
import socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(128)
conns, total = [], 0
for i in range(` + strconv.Itoa(conns) + `):
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

// atLeast raises the integer in the sysctl file f to min for the test and
// puts the old value back after it.
func atLeast(t *testing.T, f string, min int) {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	old, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	if old >= min {
		return
	}
	if err := os.WriteFile(f, []byte(strconv.Itoa(min)), 0o644); err != nil {
		t.Fatalf("raise %s from %d to %d (the test's precondition): %v", f, old, min, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(f, []byte(strconv.Itoa(old)), 0o644); err != nil {
			t.Errorf("restore %s to %d: %v", f, old, err)
		}
	})
}
