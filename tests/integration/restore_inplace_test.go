package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// A restore of a sandbox layered on a snapshot keeps its container and
// swaps the workspace under it (issue 16). The sandbox's own code had the
// time before the restore to prepare: processes that fork without end,
// ignore signals, are stopped, sit in other sessions, block on a fifo or
// hold a directory of the old workspace; links to the host's root in the
// workspace; an attempt to put a link in /workspace's place. After the
// restore the sandbox has exactly the snapshot's files and none of the old
// processes, as its default user (restored in place: the same init) and
// as root inside (a new container).
func TestRestoreInPlaceHostile(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: defaultConfig + rootConfig})
	for _, template := range []string{"python", "rooted"} {
		t.Run(template, func(t *testing.T) { restoreHostile(t, srv, template) })
	}
}

func restoreHostile(t *testing.T, srv *testserver.Server, template string) {
	c := srv.Client()
	src := createSandbox(t, srv, template)
	waitRunning(t, c, src)
	if r := sh(t, c, src, "mkdir -p data/sub && echo seed > kept.txt && echo deep > data/sub/f && chmod 0640 data/sub/f"); r.exit.GetExitCode() != 0 {
		t.Fatalf("seed: %+v", r)
	}
	tree := "find /workspace -mindepth 1 -printf '%y %m %P\\n' | sort"
	want := sh(t, c, src, tree).stdout
	snapName := "hostile-" + template
	if _, err := c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: src, Name: snapName}); err != nil {
		t.Fatal(err)
	}
	forks, err := c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: snapName, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := forks.GetSandboxes()[0].GetName()
	initStart := strings.TrimSpace(sh(t, c, f, "cut -d' ' -f22 /proc/1/stat").stdout)

	// Sleep lengths of this run alone, to find them on the host.
	n := 70000 + os.Getpid()%10000
	hostile := fmt.Sprintf(`cd /workspace
echo changed > kept.txt && echo new > extra && rm -rf data/sub
mkfifo fifo && ln -s / escape && mkdir -p deep/er && ln -s /etc/shadow deep/er/link
setsid -f sh -c 'trap "" TERM HUP INT; while :; do sleep %[1]d & sleep 0.02; done' >/dev/null 2>&1
setsid -f sh -c 'while :; do /bin/true; done' >/dev/null 2>&1
setsid -f sh -c 'echo x > /workspace/fifo' >/dev/null 2>&1
setsid -f sh -c 'cd /workspace/deep/er && exec sleep %[2]d' >/dev/null 2>&1
setsid -f sh -c 'sleep %[3]d & kill -STOP $!; wait' >/dev/null 2>&1
(mv /workspace /workspace.old && ln -s / /workspace) >/dev/null 2>&1
true`, n, n+1, n+2)
	if r := sh(t, c, f, hostile); r.exit.GetExitCode() != 0 {
		t.Fatalf("hostile setup: %+v", r)
	}
	eventually(t, "the hostile processes running", func() bool {
		out := sh(t, c, f, "pgrep -c -x sleep").stdout
		var k int
		_, _ = fmt.Sscan(out, &k)
		return k >= 4
	})
	// A watch open on the old tree ends with the agent that served it.
	watch, err := c.WatchFiles(ctx(t), &sandpodv1.WatchFilesRequest{Sandbox: f, Path: ".", Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	// Once it has seen a change, it is the old agent's.
	eventually(t, "the watch answering", func() bool {
		sh(t, c, f, "touch /workspace/w-$(date +%s%N)")
		_, err := watch.Recv()
		return err == nil
	})

	got, err := c.RestoreSandbox(ctx(t), &sandpodv1.RestoreSandboxRequest{Name: f, Snapshot: snapName})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("restored sandbox is %s: %s", got.GetSandbox().GetPhase(), got.GetSandbox().GetMessage())
	}
	// The default user's sandbox is restored in place (the same init); one
	// whose commands run as root inside gets a new container (root inside
	// could reach pasta, which the freezer does not stop).
	s := strings.TrimSpace(sh(t, c, f, "cut -d' ' -f22 /proc/1/stat").stdout)
	if inPlace := template != "rooted"; (s == initStart) != inPlace {
		t.Errorf("init started at %s before the restore and %s after; want restored in place: %v", initStart, s, inPlace)
	}
	if r := sh(t, c, f, tree); r.stdout != want {
		t.Errorf("files after the restore:\n%s\nwant the snapshot's:\n%s", r.stdout, want)
	}
	if r := sh(t, c, f, "test -d /workspace && ! test -L /workspace && cat /workspace/kept.txt && pwd"); r.stdout != "seed\n/workspace\n" {
		t.Errorf("/workspace after the restore: %+v", r)
	}
	// Only the init ("sandpod") and the agent ("exe": /proc/self/exe) and
	// pasta (the network, which the restore keeps) are left of the
	// sandbox; ps and its shell are this call.
	ps := sh(t, c, f, "ps -e -o comm=").stdout
	var left []string
	for _, comm := range strings.Fields(ps) {
		if !slices.Contains([]string{"sandpod", "exe", "pasta", "pasta.avx2", "passt", "passt.avx2", "ps", "sh"}, comm) {
			left = append(left, comm)
		}
	}
	if len(left) > 0 || strings.Count(ps, "sh\n") > 1 || strings.Count(ps, "exe\n") != 1 {
		t.Errorf("processes after the restore:\n%s", ps)
	}
	eventually(t, "no hostile process left on the host", func() bool {
		for _, k := range []int{n, n + 1, n + 2} {
			if hostRuns("sleep", fmt.Sprint(k)) {
				return false
			}
		}
		return true
	})
	for {
		_, err := watch.Recv()
		if err == nil {
			continue
		}
		if status.Code(err) != codes.Unavailable {
			t.Errorf("a watch across a restore ended with %v, want Unavailable (agent unreachable)", err)
		}
		break
	}
	// The sandbox works as before, and a second restore in place too.
	if err := writeFile(t, c, f, "after.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RestoreSandbox(ctx(t), &sandpodv1.RestoreSandboxRequest{Name: f, Snapshot: snapName}); err != nil {
		t.Fatalf("second restore: %v", err)
	}
	if r := sh(t, c, f, tree); r.stdout != want {
		t.Errorf("files after the second restore:\n%s", r.stdout)
	}
	for _, n := range []string{f, src} {
		if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: n}); err != nil {
			t.Error(err)
		}
	}
	if _, err := c.DeleteSnapshot(ctx(t), &sandpodv1.DeleteSnapshotRequest{Name: snapName}); err != nil {
		t.Error(err)
	}
	// The delete left no mount behind (the pool's members keep their
	// disks, disk_linux.go).
	for _, n := range []string{f, src} {
		dir := filepath.Join(srv.StateDir(), "sandboxes", "default", n)
		for _, m := range mountinfoBelow(t, filepath.Dir(dir)) {
			if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
				t.Errorf("mount left after the delete: %v", m)
			}
		}
	}
}

// waitRunning waits until a sandbox runs.
func waitRunning(t *testing.T, c sandpodv1.SandboxServiceClient, name string) {
	t.Helper()
	eventually(t, name+" running", func() bool {
		sb, err := getSandbox(t, c, name)
		return err == nil && sb.GetPhase() == sandpodv1.Phase_PHASE_RUNNING
	})
}

// hostRuns says whether a process with exactly these arguments runs on the
// host.
func hostRuns(args ...string) bool {
	want := []byte(strings.Join(args, "\x00") + "\x00")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Equal(b, want) {
			return true
		}
	}
	return false
}

// mountsBelow lists every mount point below dir.
func mountsBelow(t *testing.T, dir string) []string {
	var out []string
	for _, m := range mountinfoBelow(t, dir) {
		out = append(out, m.point)
	}
	return out
}

type mount struct{ point, fstype string }

// mountinfoBelow reads the mounts below dir from /proc/self/mountinfo.
func mountinfoBelow(t *testing.T, dir string) []mount {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []mount
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[4], dir+"/") {
			continue
		}
		// The file system type follows the optional fields' " - ".
		if _, rest, ok := strings.Cut(line, " - "); ok && len(strings.Fields(rest)) > 0 {
			out = append(out, mount{point: f[4], fstype: strings.Fields(rest)[0]})
		}
	}
	return out
}
