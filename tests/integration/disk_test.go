package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// Disk limits (core/engine/disk_linux.go): a sandbox that fills its disk or
// its inodes gets ENOSPC inside, its neighbours and the host carry on, and
// deleting files gives the room back. Each test fills only the disks of its
// own server's sandboxes (64 MiB each).

// smallDiskConfig: templates with a 64 MiB disk (so 4096 inodes), one of
// them running commands as root inside, which can write to its own root
// file system too.
const smallDiskConfig = `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: small
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
        resources: {limits: {ephemeral-storage: 64Mi}}
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: small-root
spec:
  podTemplate:
    spec:
      securityContext: {runAsUser: 0}
      containers:
      - name: sandbox
        image: unused
        resources: {limits: {ephemeral-storage: 64Mi}}
`

const smallDisk = 64 << 20

// fillScript writes 1 MiB blocks to the file given until the file system
// refuses, then prints the errno's name and the MiB written.
const fillScript = `import errno, os, sys
n = 0
try:
    with open(sys.argv[1], "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
            f.flush()
            os.fsync(f.fileno())
            n += 1
            if n > 1024:
                break
except OSError as e:
    print(errno.errorcode[e.errno], n)
    sys.exit(0)
print("NONE", n)
`

// inodeScript makes empty files in the directory given until refused.
const inodeScript = `import errno, os, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
n = 0
try:
    while n < 100000:
        open(os.path.join(d, str(n)), "w").close()
        n += 1
except OSError as e:
    print(errno.errorcode[e.errno], n)
    sys.exit(0)
print("NONE", n)
`

func pyRun(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, script string, args ...string) string {
	t.Helper()
	r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sandbox, Argv: append([]string{"python3", "-c", script}, args...)}, "")
	if err != nil {
		t.Fatalf("python in %s: %v", sandbox, err)
	}
	if r.exit.GetExitCode() != 0 {
		t.Fatalf("python in %s: exit %d: %s", sandbox, r.exit.GetExitCode(), r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// refused parses "ERRNO count" and checks that the errno is ENOSPC or
// EDQUOT, returning the count.
func refused(t *testing.T, what, out string) int {
	t.Helper()
	f := strings.Fields(out)
	if len(f) != 2 || (f[0] != "ENOSPC" && f[0] != "EDQUOT") {
		t.Fatalf("%s: %q, want ENOSPC or EDQUOT after some writes", what, out)
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// loopsOf lists the loop devices whose backing file is below dir.
func loopsOf(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("losetup", "-a").CombinedOutput()
	if err != nil {
		t.Fatalf("losetup -a: %v\n%s", err, out)
	}
	var mine []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, dir) {
			mine = append(mine, l)
		}
	}
	return mine
}

func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func TestDiskLimitFillAndInodes(t *testing.T) {
	srv := startServer(t, testserver.PythonTemplate+smallDiskConfig)
	c := srv.Client()
	if log := srv.Log(); !strings.Contains(log, "disk=\"loop-mounted ext4 image per sandbox") {
		t.Fatalf("serve's start log does not say how disks are bounded:\n%s", log)
	}
	tl, err := c.ListTemplates(ctx(t), &sandpodv1.ListTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range tl.GetTemplates() {
		want := int64(10 << 30) // the default
		if strings.HasPrefix(tm.GetName(), "small") {
			want = smallDisk
		}
		if tm.GetDiskLimitBytes() != want || tm.GetInodeLimit() != want/(16<<10) {
			t.Errorf("template %s: disk limit %d bytes, %d inodes; want %d and %d", tm.GetName(), tm.GetDiskLimitBytes(), tm.GetInodeLimit(), want, want/(16<<10))
		}
	}
	a := createSandbox(t, srv, "small-root")
	b := createSandbox(t, srv, "small")
	waitRunning(t, c, a)
	waitRunning(t, c, b)
	img := filepath.Join(srv.StateDir(), "disks", "default", a+".img")
	if l := loopsOf(t, srv.StateDir()); len(l) < 2 {
		t.Errorf("loop devices on this server's images: %v, want one per sandbox", l)
	}
	var host syscall.Statfs_t
	if err := syscall.Statfs(srv.StateDir(), &host); err != nil {
		t.Fatal(err)
	}
	hostFree := int64(host.Bavail) * host.Bsize

	// Fill the workspace: refused short of the limit, not at the host's.
	mib := refused(t, "fill /workspace", pyRun(t, c, a, fillScript, "/workspace/fill"))
	t.Logf("the workspace took %d MiB before ENOSPC", mib)
	if mib < 32 || mib > 64 {
		t.Errorf("wrote %d MiB before ENOSPC, want 32..64 (a 64 MiB disk)", mib)
	}
	// Root inside fills its own root file system: the same disk, now full.
	if n := refused(t, "fill the root file system", pyRun(t, c, a, fillScript, "/fill-root")); n > 1 {
		t.Errorf("the root file system took %d MiB more after the workspace filled the disk", n)
	}
	if got := allocated(t, img); got > smallDisk {
		t.Errorf("the image takes %d bytes on the host, over its %d", got, smallDisk)
	}
	if err := syscall.Statfs(srv.StateDir(), &host); err != nil {
		t.Fatal(err)
	}
	if drop := hostFree - int64(host.Bavail)*host.Bsize; drop > 2*smallDisk {
		t.Errorf("the host's disk lost %d bytes to one sandbox with a %d-byte limit", drop, smallDisk)
	}
	// The other sandbox and the host are unaffected.
	if n := refused(t, "b's writes", pyRun(t, c, b, fillScript, "/workspace/fill")); n < 32 {
		t.Errorf("the other sandbox wrote %d MiB, want its own 32+", n)
	}
	sh(t, c, b, "rm -f /workspace/fill")
	if err := os.WriteFile(filepath.Join(srv.StateDir(), "host-write"), make([]byte, 1<<20), 0o600); err != nil {
		t.Errorf("the host cannot write beside the state store: %v", err)
	}

	// Deleting gives the room back, inside and on the host (discard).
	before := allocated(t, img)
	sh(t, c, a, "rm -f /workspace/fill /fill-root && sync")
	if r := sh(t, c, a, "head -c 10485760 /dev/zero > /workspace/again && echo ok"); r.stdout != "ok\n" {
		t.Errorf("after rm, a 10 MiB write: %q %q", r.stdout, r.stderr)
	}
	eventually(t, "the image to give deleted blocks back to the host", func() bool {
		return allocated(t, img) < before-32<<20
	})
	sh(t, c, a, "rm -f /workspace/again")

	// Inodes: 4096 on a 64 MiB disk, fewer left for files.
	n := refused(t, "make files", pyRun(t, c, a, inodeScript, "/workspace/many"))
	t.Logf("%d files before ENOSPC", n)
	if n < 3000 || n > 4096 {
		t.Errorf("made %d files before ENOSPC, want 3000..4096", n)
	}
	if r := sh(t, c, b, "mkdir -p /workspace/d && touch /workspace/d/f && echo ok"); r.stdout != "ok\n" {
		t.Errorf("the other sandbox cannot make a file: %q %q", r.stdout, r.stderr)
	}
	sh(t, c, a, "rm -rf /workspace/many")
	if n := refused(t, "make files again", pyRun(t, c, a, inodeScript, "/workspace/many")); n < 3000 {
		t.Errorf("after rm, made only %d files", n)
	}

	// Deleting the sandboxes leaves no mount, loop device or image.
	for _, n := range []string{a, b} {
		if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	wantNoDisks(t, srv.StateDir())
}

// wantNoDisks checks that nothing of the sandboxes' disks is left: no
// mount below the state directory, no loop device on one of its images,
// no image.
func wantNoDisks(t *testing.T, state string) {
	t.Helper()
	eventually(t, "no loop device on an image of "+state, func() bool { return len(loopsOf(t, state)) == 0 })
	if m := mountsBelow(t, filepath.Join(state, "sandboxes")); len(m) != 0 {
		t.Errorf("mounts left: %v", m)
	}
	imgs, _ := filepath.Glob(filepath.Join(state, "disks", "*", "*"))
	for _, img := range imgs {
		if filepath.Base(filepath.Dir(img)) != ".formatted" { // the formatted images copies are made from
			t.Errorf("image left: %s", img)
		}
	}
}

// A sandbox's disk outlives suspend and resume, a restart and a crash of
// serve, a purge (the next serve mounts it again), and goes with snapshots,
// forks and restores: the files are there and the limit still holds.
func TestDiskLimitSurvivesLifecycle(t *testing.T) {
	srv := startServer(t, testserver.PythonTemplate+smallDiskConfig)
	c := srv.Client()
	a := createSandbox(t, srv, "small")
	waitRunning(t, c, a)
	sum := sh(t, c, a, "head -c 1048576 /dev/urandom > keep && sha256sum keep").stdout
	kept := func(n, when string) {
		t.Helper()
		if got := sh(t, c, n, "sha256sum keep").stdout; got != sum {
			t.Fatalf("%s: %s's file is %q, want %q", when, n, got, sum)
		}
	}
	limited := func(n, when string) {
		t.Helper()
		mib := refused(t, when+": fill "+n, pyRun(t, c, n, fillScript, "/workspace/fill"))
		if mib < 30 || mib > 64 {
			t.Errorf("%s: %s wrote %d MiB before ENOSPC, want 30..64", when, n, mib)
		}
		sh(t, c, n, "rm -f /workspace/fill")
	}

	// A full disk (inodes and bytes) does not keep the sandbox from
	// starting again: the engine writes its start files into room kept
	// for it.
	refused(t, "make files", pyRun(t, c, a, inodeScript, "/workspace/many"))
	refused(t, "fill", pyRun(t, c, a, fillScript, "/workspace/fill"))
	if _, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: a}); err != nil {
		t.Fatalf("resume with a full disk: %v", err)
	}
	kept(a, "after suspend and resume")
	sh(t, c, a, "rm -rf /workspace/many /workspace/fill")
	limited(a, "after suspend and resume")

	srv.Restart(t)
	c = srv.Client()
	kept(a, "after a restart of serve")
	srv.Kill(t)
	srv.StartAgain(t)
	c = srv.Client()
	kept(a, "after a crash of serve")

	// A crash, then a purge: the disk is unmounted and its loop device
	// gone; the next serve mounts the image again.
	srv.Kill(t)
	if code, out := sandpod(t, "purge", "--state-dir", srv.StateDir()); code != 0 {
		t.Fatalf("purge (exit %d):\n%s", code, out)
	}
	if m := mountsBelow(t, srv.StateDir()); len(m) != 0 {
		t.Errorf("purge left mounts: %v", m)
	}
	eventually(t, "purge to free the loop devices", func() bool { return len(loopsOf(t, srv.StateDir())) == 0 })
	srv.StartAgain(t)
	c = srv.Client()
	waitRunning(t, c, a)
	kept(a, "after a crash, a purge and a new serve")
	limited(a, "after a crash, a purge and a new serve")

	// A fork has a disk of its own with the same limit; a restore keeps the
	// sandbox's disk.
	if _, err := c.SnapshotSandbox(ctx(t), &sandpodv1.SnapshotSandboxRequest{Sandbox: a, Name: "disk-snap"}); err != nil {
		t.Fatal(err)
	}
	fr, err := c.ForkSandbox(ctx(t), &sandpodv1.ForkSandboxRequest{Snapshot: "disk-snap", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := fr.GetSandboxes()[0].GetName()
	kept(f, "in a fork")
	limited(f, "in a fork")
	sh(t, c, a, "rm keep")
	if _, err := c.RestoreSandbox(ctx(t), &sandpodv1.RestoreSandboxRequest{Name: a, Snapshot: "disk-snap"}); err != nil {
		t.Fatal(err)
	}
	kept(a, "after a restore")
	limited(a, "after a restore")

	for _, n := range []string{a, f} {
		if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	wantNoDisks(t, srv.StateDir())
}
