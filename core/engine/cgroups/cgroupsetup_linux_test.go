package cgroups

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeCgroupfs lays out files as cgroupfs shows them (empty here): the
// engine may write only files that exist, as on the kernel's.
func fakeCgroupfs(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readFiles(t *testing.T, root string, files ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		got[f] = string(b)
	}
	return got
}

// The files and values the engine writes for a sandbox, on a directory
// laid out as a cgroup v2 file system: delegation, limits, freeze and
// thaw, cgroup.kill on delete.
func TestCgroupV2WritesOnACgroupfsLayout(t *testing.T) {
	c := "sandpod/" + testID + "/"
	files := []string{"cgroup.subtree_control", "sandpod/cgroup.subtree_control",
		c + "memory.max", c + "memory.swap.max", c + "pids.max", c + "cpu.max",
		c + "cgroup.freeze", c + "cgroup.kill", c + "cgroup.procs"}
	root := fakeCgroupfs(t, files...)
	l := Layout{root: root, mode: cgroupV2}
	if err := applyCgroupWrites(l.delegationWrites()); err != nil {
		t.Fatal(err)
	}
	// The kernel keeps every controller written; a plain file the last.
	if got := readFiles(t, root, "cgroup.subtree_control", "sandpod/cgroup.subtree_control"); got["cgroup.subtree_control"] != "+cpu" || got["sandpod/cgroup.subtree_control"] != "+cpu" {
		t.Errorf("delegation: %v", got)
	}
	if err := l.PrepareContainer(testID, Limits{MemoryBytes: 256 << 20, CPUMillis: 500, PidsLimit: 4096}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{c + "memory.max": "268435456", c + "memory.swap.max": "0", c + "pids.max": "4096", c + "cpu.max": "50000 100000"}
	if got := readFiles(t, root, c+"memory.max", c+"memory.swap.max", c+"pids.max", c+"cpu.max"); !equalMaps(got, want) {
		t.Errorf("limits: %v, want %v", got, want)
	}
	// Freezing writes cgroup.freeze and waits for cgroup.events to say so
	// (the kernel's part, played here).
	f, _ := l.Container(testID).Freezer()
	if err := os.WriteFile(filepath.Join(root, c+"cgroup.events"), []byte("populated 1\nfrozen 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Set(f.FrozenIn, f.FrozenOut); err != nil {
		t.Fatal(err)
	}
	if got := readFiles(t, root, c+"cgroup.freeze"); got[c+"cgroup.freeze"] != "1" {
		t.Errorf("freeze wrote %v", got)
	}
	if err := os.WriteFile(filepath.Join(root, c+"cgroup.events"), []byte("populated 1\nfrozen 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Set(f.ThawedIn, f.ThawedOut); err != nil {
		t.Fatal(err)
	}
	if got := readFiles(t, root, c+"cgroup.freeze"); got[c+"cgroup.freeze"] != "0" {
		t.Errorf("thaw wrote %v", got)
	}
	// Delete: cgroup.kill before the rmdir (which fails here: the fake's
	// files are real ones).
	_ = rmdirAll(l, testID, nil)
	if got := readFiles(t, root, c+"cgroup.kill"); got[c+"cgroup.kill"] != "1" {
		t.Errorf("delete wrote %v, want cgroup.kill 1", got)
	}
}

func TestCgroupV1WritesOnACgroupfsLayout(t *testing.T) {
	dir := func(ctl string) string { return ctl + "/sandpod/" + testID + "/" }
	files := []string{dir("memory") + "memory.limit_in_bytes", dir("memory") + "memory.memsw.limit_in_bytes",
		dir("pids") + "pids.max", dir("cpu") + "cpu.cfs_period_us", dir("cpu") + "cpu.cfs_quota_us",
		dir("freezer") + "freezer.state", dir("freezer") + "cgroup.procs"}
	root := fakeCgroupfs(t, files...)
	l := Layout{root: root, mode: cgroupV1, memsw: true}
	if err := l.PrepareContainer(testID, Limits{MemoryBytes: 256 << 20, CPUMillis: 1500, PidsLimit: 64}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		dir("memory") + "memory.limit_in_bytes": "268435456", dir("memory") + "memory.memsw.limit_in_bytes": "268435456",
		dir("pids") + "pids.max": "64", dir("cpu") + "cpu.cfs_period_us": "100000", dir("cpu") + "cpu.cfs_quota_us": "150000",
	}
	if got := readFiles(t, root, files[:5]...); !equalMaps(got, want) {
		t.Errorf("limits: %v, want %v", got, want)
	}
	_ = rmdirAll(l, testID, nil)
	if got := readFiles(t, root, dir("freezer")+"freezer.state"); got[dir("freezer")+"freezer.state"] != "THAWED" {
		t.Errorf("delete wrote %v, want the freezer thawed", got)
	}
}

func TestCgroupMountsAsRuncFindsThem(t *testing.T) {
	const mountinfo = `249 145 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
1004 249 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct
1010 249 0:31 / /sys/fs/cgroup/memory rw,relatime master:3 - cgroup cgroup rw,memory
1020 249 0:40 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
1030 145 0:41 / /mnt/my\040cgroups rw - cgroup cgroup rw,pids
1040 1030 0:41 / /sys/fs/cgroup/odd\040name rw - cgroup cgroup rw,pids
1050 145 0:42 / /sys/fs/cgroup/memory/nested rw - cgroup cgroup rw,memory
`
	for name, tc := range map[string]struct {
		root string
		want []string
	}{
		"v1 and hybrid under /sys/fs/cgroup": {"/sys/fs/cgroup", []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/odd name"}},
		"another root":                       {"/mnt", []string{"/mnt/my cgroups"}},
		"none":                               {"/srv", nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := cgroupMountsIn(mountinfo, tc.root); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A v1 host without one of the hierarchies the engine writes is refused,
// with the hierarchy named; the others are probed with a cgroup made and
// removed.
func TestProbeV1NamesAMissingHierarchy(t *testing.T) {
	root := t.TempDir()
	var mounts []string
	for _, c := range []string{"memory", "pids", "cpu", "cpuset"} {
		mounts = append(mounts, filepath.Join(root, c))
		if err := os.Mkdir(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	problems := probeV1(root, mounts)
	if len(problems) != 1 || problems[0].What != filepath.Join(root, "freezer") || !strings.Contains(problems[0].Err, "no cgroup v1 freezer hierarchy") {
		t.Fatalf("problems %+v, want the freezer named", problems)
	}
	for _, m := range mounts {
		entries, err := os.ReadDir(filepath.Join(m, "sandpod"))
		if err != nil || len(entries) != 0 {
			t.Errorf("%s/sandpod after the probe: %v %v, want it there and empty", m, entries, err)
		}
	}
}

// A controller whose file is missing is an error, not a file to create;
// and what the start made of the container's cgroups goes again.
func TestCgroupWritesNeedTheKernelsFiles(t *testing.T) {
	root := fakeCgroupfs(t, "sandpod/cgroup.subtree_control")
	l := Layout{root: root, mode: cgroupV2}
	err := l.PrepareContainer(testID, Limits{PidsLimit: 10})
	if err == nil || !strings.Contains(err.Error(), "pids.max") {
		t.Fatalf("want the missing pids.max named, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "sandpod", testID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed start's cgroup is still there: %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The engine's v2 code on a real cgroup2 file system, mounted in a mount
// namespace of this test's own (the test binary runs again in it). On a
// hybrid host (memory, pids and cpu bound to v1 hierarchies) the limits
// cannot be checked there, but the refusal, the freezer, cgroup.procs and
// cgroup.kill are the kernel's own.
func TestCgroupV2OnARealCgroup2(t *testing.T) {
	if dir := os.Getenv("SANDPOD_TEST_CGROUP2_DIR"); dir != "" {
		cgroupV2Checks(t, dir)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupV2OnARealCgroup2$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SANDPOD_TEST_CGROUP2_DIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // and / private (Go does that)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCgroupV2OnARealCgroup2") {
		t.Fatalf("in a mount namespace of its own: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func cgroupV2Checks(t *testing.T, root string) {
	if err := unix.Mount("none", root, "cgroup2", 0, ""); err != nil {
		t.Fatalf("mount cgroup2 on %s: %v", root, err)
	}
	defer func() { _ = unix.Unmount(root, unix.MNT_DETACH) }()
	controllers, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	limited := true
	for _, c := range limitedControllers {
		limited = limited && strings.Contains(" "+strings.TrimSpace(string(controllers))+" ", " "+c+" ")
	}
	t.Logf("cgroup2 controllers here: %q", strings.TrimSpace(string(controllers)))

	// Detection follows the file system, and refuses, naming what is
	// missing, where the controllers are not there.
	l, err := Detect(root)
	switch {
	case limited && err != nil:
		t.Fatalf("a cgroup2 with %s refused: %v", controllers, err)
	case limited && l.mode != cgroupV2:
		t.Fatalf("layout %+v, want v2", l)
	case !limited:
		var le *LimitsError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), "cgroup v2 (unified hierarchy at "+root+")") ||
			!strings.Contains(err.Error(), "controller") || !strings.Contains(err.Error(), "--no-limits") {
			t.Fatalf("a cgroup2 without memory, pids or cpu: %v", err)
		}
		l = Layout{root: root, mode: cgroupV2}
	}

	id := "sb-" + randomHex()[:16] + "-" + randomHex()[:8]
	if err := os.MkdirAll(filepath.Join(root, cgroupParent), 0o755); err != nil {
		t.Fatal(err)
	}
	lim := Limits{}
	if limited {
		lim = Limits{MemoryBytes: 256 << 20, CPUMillis: 500, PidsLimit: 64}
	}
	if err := l.PrepareContainer(id, lim); err != nil {
		t.Fatal(err)
	}
	dir := l.dir("", id)
	t.Cleanup(func() { _ = unix.Rmdir(dir) })
	if limited {
		want := map[string]string{"memory.max": "268435456\n", "memory.swap.max": "0\n", "pids.max": "64\n", "cpu.max": "50000 100000\n"}
		if got := readFiles(t, dir, "memory.max", "memory.swap.max", "pids.max", "cpu.max"); !equalMaps(got, want) {
			t.Errorf("limits as the kernel shows them: %v, want %v", got, want)
		}
	}

	// A busy process in the container's cgroup (as runc would put it).
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- busy.Wait() }()
	t.Cleanup(func() { _ = busy.Process.Kill() })
	c := l.Container(id)
	if err := os.WriteFile(c.Procs, []byte(strconv.Itoa(busy.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(c.Procs); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(busy.Process.Pid) {
		t.Fatalf("the cgroup's processes: %q %v, want [%d]", b, err, busy.Process.Pid)
	}

	// Frozen: it runs no more (its CPU time stands still); thawed, it does.
	f, ok := c.Freezer()
	if !ok {
		t.Fatal("no freezer files on cgroup v2")
	}
	if err := f.Set(f.FrozenIn, f.FrozenOut); err != nil {
		t.Fatal(err)
	}
	if frozen, err := f.Settled(f.FrozenOut); err != nil || !frozen {
		t.Fatalf("frozen: %v %v", frozen, err)
	}
	a := cpuTicks(t, busy.Process.Pid)
	time.Sleep(300 * time.Millisecond)
	if b := cpuTicks(t, busy.Process.Pid); b != a {
		t.Errorf("a frozen process ran: cpu ticks %d then %d", a, b)
	}
	if err := f.Set(f.ThawedIn, f.ThawedOut); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); cpuTicks(t, busy.Process.Pid) == a; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the thawed process never ran again")
		}
	}

	// Delete: cgroup.kill ends it (no signal of the test's), frozen or not,
	// and the cgroup goes.
	if err := f.Set(f.FrozenIn, f.FrozenOut); err != nil {
		t.Fatal(err)
	}
	l.Remove(id)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the container's process ended with %v, want SIGKILL (cgroup.kill)", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("cgroup.kill did not end the container's process")
	}
	if !AwaitPendingRemovals(Retry + 5*time.Second) {
		t.Fatal("the removal still runs")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there: %v", dir, err)
	}
}

// cpuTicks is the user and system time of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from the 3rd (state)
	u, _ := strconv.ParseInt(f[11], 10, 64)                  // utime, the 14th
	k, _ := strconv.ParseInt(f[12], 10, 64)                  // stime
	return u + k
}
