package integration

import (
	"strings"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// A restore in place keeps the container, so whatever the old process tree
// left outside /workspace in the container's own file systems would outlive
// the restore, where a new container (the restore before issue 16) starts
// them empty: code that a restore is meant to roll back could leave a file
// there for what runs next. The restore leaves /tmp, /dev/shm, /dev/mqueue
// and the System V IPC objects as empty as a new container has them.
func TestRestoreInPlaceLeavesNoOldState(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: defaultConfig})
	c := srv.Client()
	src := createSandbox(t, srv, "python")
	waitRunning(t, c, src)
	if _, err := c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: src, Name: "state"}); err != nil {
		t.Fatal(err)
	}
	forks, err := c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "state", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := forks.GetSandboxes()[0].GetName()
	initStart := strings.TrimSpace(sh(t, c, f, "cut -d' ' -f22 /proc/1/stat").stdout)
	list := "ls -A /tmp /dev/shm /dev/mqueue; tail -n +2 /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem"
	fresh := sh(t, c, f, list).stdout
	plant := `set -e
echo 'print("planted")' > /tmp/sitecustomize.py
mkdir -p /tmp/.hidden/deep && echo x > /tmp/.hidden/deep/f && ln -s / /tmp/.hidden/root
mkfifo /tmp/fifo && echo x > /dev/shm/payload
python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); fd = libc.mq_open(b"/q", os.O_CREAT | os.O_RDWR, 0o600, None); assert fd >= 0, os.strerror(ctypes.get_errno())'
ls /dev/mqueue/q
python3 -c 'import ctypes; libc = ctypes.CDLL(None); assert min(libc.shmget(0x5eed, 4096, 0o1600), libc.msgget(0x5eed, 0o1600), libc.semget(0x5eed, 1, 0o1600)) >= 0'
test "$(cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem | wc -l)" = 6`
	if r := sh(t, c, f, plant); r.exit.GetExitCode() != 0 {
		t.Fatalf("plant: %+v", r)
	}
	if _, err := c.RestoreSandbox(ctx(t), &sandpodv1.RestoreSandboxRequest{Name: f, Snapshot: "state"}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if s := strings.TrimSpace(sh(t, c, f, "cut -d' ' -f22 /proc/1/stat").stdout); s != initStart {
		t.Fatalf("not restored in place (init started at %s, then %s): this test checks the restore in place", initStart, s)
	}
	if got := sh(t, c, f, list).stdout; got != fresh {
		t.Errorf("after a restore in place:\n%s\nwant what a new container has:\n%s", got, fresh)
	}
	// The sandbox works as before.
	if r := sh(t, c, f, "echo ok > /tmp/new && cat /tmp/new"); r.stdout != "ok\n" {
		t.Errorf("/tmp after the restore: %+v", r)
	}
}

// Processes in states a kill has to get right: stopped in a ptrace (its
// tracer sleeping), a vfork parent waiting on a child that never execs,
// the child itself, and a zombie whose parent never reaps it. None is
// left after a restore in place, inside or on the host.
func TestRestoreInPlaceKillsTracedAndVforked(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: defaultConfig})
	c := srv.Client()
	src := createSandbox(t, srv, "python")
	waitRunning(t, c, src)
	if _, err := c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: src, Name: "odd"}); err != nil {
		t.Fatal(err)
	}
	forks, err := c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "odd", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := forks.GetSandboxes()[0].GetName()
	initStart := strings.TrimSpace(sh(t, c, f, "cut -d' ' -f22 /proc/1/stat").stdout)
	odd := `cat > /tmp/odd.py <<'PY'
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
kind = sys.argv[1]
if kind == "traced":
    pid = os.fork()
    if pid == 0:
        libc.ptrace(0, 0, 0, 0)  # PTRACE_TRACEME
        os.kill(os.getpid(), signal.SIGSTOP)
        while True: time.sleep(1)
    while True: time.sleep(1)  # the tracer never continues it
elif kind == "vfork":
    pid = libc.vfork()
    if pid == 0:
        while True: libc.sleep(1)  # never execs: the parent stays in vfork
elif kind == "zombie":
    if os.fork() == 0:
        os._exit(0)
    while True: time.sleep(1)  # never reaps it
PY
for k in traced vfork zombie; do setsid -f python3 /tmp/odd.py $k >/dev/null 2>&1; done
true`
	if r := sh(t, c, f, odd); r.exit.GetExitCode() != 0 {
		t.Fatalf("setup: %+v", r)
	}
	states := "ps -e -o stat=,comm= | grep python3 | cut -c1 | sort | tr -d '\\n'"
	eventually(t, "the traced (t), vforked (D or S) and zombie (Z) processes", func() bool {
		s := sh(t, c, f, states).stdout
		return strings.Contains(s, "t") && strings.Contains(s, "Z") && len(s) >= 6
	})
	if _, err := c.RestoreSandbox(ctx(t), &sandpodv1.RestoreSandboxRequest{Name: f, Snapshot: "odd"}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if s := strings.TrimSpace(sh(t, c, f, "cut -d' ' -f22 /proc/1/stat").stdout); s != initStart {
		t.Fatalf("not restored in place (init started at %s, then %s)", initStart, s)
	}
	if r := sh(t, c, f, "ps -e -o stat=,comm="); strings.Contains(r.stdout, "python3") {
		t.Errorf("processes after the restore:\n%s", r.stdout)
	}
	eventually(t, "none of them on the host", func() bool {
		for _, k := range []string{"traced", "vfork", "zombie"} {
			if hostRuns("python3", "/tmp/odd.py", k) {
				return false
			}
		}
		return true
	})
}
