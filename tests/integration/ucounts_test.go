package integration

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// hog takes, as the sandbox's user, every inotify instance, POSIX message
// queue and queued real-time signal (sigqueue: kill's overflow is silent)
// the kernel lets it have, writes how
// many of each to hog.out and holds them (its argv[0] is the marker).
const hog = `
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
ino = 0
while libc.inotify_init() >= 0:
    ino += 1
mq = 0
while mq < 10000 and libc.mq_open(b"/hog%d" % mq, os.O_CREAT | os.O_RDWR, 0o600, None) >= 0:
    mq += 1
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
sig = 0
while sig < 10**6 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    sig += 1
with open("hog.tmp", "w") as f:
    f.write("%d %d %d\n" % (ino, mq, sig))
os.rename("hog.tmp", "hog.out")
time.sleep(3600)
`

// hostRootProbe is what host root must still be able to do while the hog
// holds its take: an inotify instance, a message queue, queued signals.
const hostRootProbe = `
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
out = []
fd = libc.inotify_init()
out.append("inotify_init=%s" % ("ok" if fd >= 0 else os.strerror(ctypes.get_errno())))
name = b"/sandpod-ucounts-probe-%d" % os.getpid()
q = libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)
out.append("mq_open=%s" % ("ok" if q >= 0 else os.strerror(ctypes.get_errno())))
if q >= 0:
    libc.mq_unlink(name)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
queued = 0
while queued < 100 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    queued += 1
out.append("sigqueue=%s" % ("ok" if queued == 100 else os.strerror(ctypes.get_errno())))
print(" ".join(out))
`

// One sandbox takes all it can of the kernel's per-user budgets. They are
// its own (its user namespace is owned by its own host id, not by root):
// host root and another sandbox keep theirs. The hog's sandbox is deleted
// at the end, which gives back what it took.
func TestSandboxCannotTakeHostRootsKernelBudgets(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: storeConfig})
	c := srv.Client()
	victim, _ := claim(t, c, "python")
	attacker, _ := claim(t, c, "python")
	defer func() {
		_, err := c.DeleteSandbox(context.Background(), &sandpodv1.DeleteSandboxRequest{Name: attacker.GetName()})
		if err != nil {
			t.Errorf("delete the hog's sandbox: %v", err)
		}
	}()
	if err := writeFile(t, c, attacker.GetName(), "hog.py", []byte(hog)); err != nil {
		t.Fatal(err)
	}
	marker := uniqueMarker("sandpod-hog")
	sh(t, c, attacker.GetName(), "setsid -f sh -c 'exec python3 hog.py' >/dev/null 2>&1")
	var took []int
	eventually(t, "the hog's count", func() bool {
		b, err := readFile(t, c, attacker.GetName(), "hog.out")
		if err != nil {
			return false
		}
		took = nil
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			took = append(took, n)
		}
		return true
	})
	t.Logf("the sandbox's user took %d inotify instances, %d message queues, %d queued signals", took[0], took[1], took[2])
	if len(took) != 3 || took[0] < 64 || took[1] < 1 || took[2] < 1000 || took[2] >= 1e6 {
		t.Fatalf("the hog took %v: too little to prove anything", took)
	}

	// The user namespace that charges them is owned by the sandbox's own
	// host id (the base of its range: its root), not by host root.
	pid := markedProcess(t, c, attacker.GetName(), marker)
	uid := hostUID(t, pid)
	ns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := unix.IoctlGetUint32(int(ns.Fd()), unix.NS_GET_OWNER_UID)
	ns.Close()
	if err != nil {
		t.Fatal(err)
	}
	if owner == 0 || owner != uid-1000 {
		t.Errorf("the sandbox's user namespace is owned by host uid %d; want the base of its range (its user is host uid %d)", owner, uid)
	}

	// Host root still has its budgets.
	cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "python3", "-c", hostRootProbe).CombinedOutput()
	if err != nil {
		t.Fatalf("probe as host root: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "inotify_init=ok mq_open=ok sigqueue=ok" {
		t.Errorf("host root, while a sandbox holds all it could take: %s", got)
	}

	// Another sandbox can still watch files (an inotify instance of its own).
	sh(t, c, victim.GetName(), "mkdir -p w")
	wctx, wcancel := context.WithCancel(ctx(t))
	defer wcancel()
	stream, err := c.WatchFiles(wctx, &sandpodv1.WatchFilesRequest{Sandbox: victim.GetName(), Path: "w"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.Recv()
	if err != nil {
		t.Fatalf("another sandbox's WatchFiles while the hog holds its take: %v", err)
	}
	if ev := m.GetEvents(); len(ev) == 0 || eventString(ev[0]) != "READY w/" {
		t.Errorf("another sandbox's WatchFiles: first events %v, want READY w/", ev)
	}
}
