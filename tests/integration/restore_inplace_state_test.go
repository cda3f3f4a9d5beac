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
