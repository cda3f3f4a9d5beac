package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// ContainerIDPattern is the shape of the ids newContainerID makes; nothing
// else is ever joined to a cgroup path below.
var ContainerIDPattern = regexp.MustCompile(`^sb-[0-9a-f]{16}(-[0-9a-f]{8})?$`)

// Retry bounds how long removeCgroups waits for the killed processes
// of a container to leave its cgroups.
const Retry = 30 * time.Second

// removeCgroups removes what runc left of a container's cgroups. runc
// deletes its state even when it cannot remove the cgroups (their
// processes, killed, have not all exited yet: it retries for about a
// second) and still exits 0, so on a loaded machine every such delete left
// empty memory, cpu and pids cgroups behind, a thousand a day here. The
// processes are already killed (the init died and its PID namespace with
// it): this only waits for them to go, then removes the directories, in the
// background when that takes longer than a first try.
func (l Layout) Remove(id string) {
	if !ContainerIDPattern.MatchString(id) {
		return
	}
	dirs := l.existingDirs(id)
	if len(dirs) == 0 {
		return
	}
	if dirs = rmdirAll(l, id, dirs); len(dirs) > 0 {
		cgroupRemovals.Add(1)
		go func() {
			defer cgroupRemovals.Done()
			_ = retryRmdir(l, id, dirs, Retry)
		}()
	}
}

// cgroupRemovals counts the background removals still retrying: a process
// that exits while one runs leaves its cgroups behind (Engine.Close waits).
// Not a sync.WaitGroup: a removal may begin while a Close that timed out
// still waits, which a WaitGroup answers with a panic ("reused before
// previous Wait has returned").
var cgroupRemovals pendingCount

// pendingCount counts work in progress; idle is closed while none is.
type pendingCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (c *pendingCount) Add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 || c.idle == nil {
		c.idle = make(chan struct{})
	}
	c.n += n
}

func (c *pendingCount) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		close(c.idle)
	}
}

// Idle is closed once nothing is pending (at once when nothing is).
func (c *pendingCount) Idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	return c.idle
}

// AwaitPendingRemovals waits up to limit for the background removals
// and reports whether they all finished.
func AwaitPendingRemovals(limit time.Duration) bool {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-cgroupRemovals.Idle():
		return true
	case <-t.C:
		return false
	}
}

// StrayDelay is how long an empty container cgroup must stay empty
// before an engine's start removes it. runc makes a container's cgroups an
// instant before it moves the init into them, and engines share sandpod/,
// so an empty one may be another engine's container being born; one that
// is still empty this much later is not. (A cgroup directory's mtime
// cannot tell its age: kernfs sets it when the inode is first looked up.)
const StrayDelay = 10 * time.Second

// sweepStrayCgroups removes the container cgroups that a process which
// exited (or was killed) while their removal was pending left behind.
func (l Layout) SweepStray(delay time.Duration) int {
	dirs, _ := filepath.Glob(filepath.Join(l.root, "*", cgroupParent, "sb-*"))
	v2, _ := filepath.Glob(filepath.Join(l.root, cgroupParent, "sb-*"))
	return removeIfStillEmpty(append(dirs, v2...), delay)
}

// removeIfStillEmpty removes the container cgroups among dirs that have no
// process now and still none after delay. rmdir removes only a cgroup
// without processes or children, so a live container's cgroup, of any
// engine, is never touched; returns how many went.
func removeIfStillEmpty(dirs []string, delay time.Duration) int {
	var empty []string
	for _, d := range dirs {
		if !ContainerIDPattern.MatchString(filepath.Base(d)) {
			continue
		}
		if procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil && len(procs) == 0 {
			empty = append(empty, d)
		}
	}
	if len(empty) == 0 {
		return 0
	}
	time.Sleep(delay)
	removed := 0
	for _, d := range empty {
		if syscall.Rmdir(d) == nil {
			removed++
		}
	}
	return removed
}

// awaitCgroupsRemoved is removeCgroups for a process about to exit (purge):
// it waits, up to Retry, and returns the directories still there.
func (l Layout) AwaitRemoved(ids []string) []string {
	var left []string
	for _, id := range ids {
		if ContainerIDPattern.MatchString(id) {
			left = append(left, retryRmdir(l, id, l.existingDirs(id), Retry)...)
		}
	}
	return left
}

// retryRmdir tries rmdirAll with a growing pause until nothing is left or
// the time is up, and returns what is left.
func retryRmdir(l Layout, id string, dirs []string, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		if len(dirs) == 0 {
			return nil
		}
		if dirs = rmdirAll(l, id, dirs); len(dirs) == 0 || time.Now().After(deadline) {
			return dirs
		}
		time.Sleep(delay)
	}
}

// existingDirs lists the cgroup directories of a container that exist:
// one per v1 hierarchy (runc makes one in each, not only those the engine
// writes), or the one of the v2 hierarchy.
func (l Layout) existingDirs(id string) []string {
	if l.mode == cgroupV2 {
		if fi, err := os.Stat(l.dir("", id)); err == nil && fi.IsDir() {
			return []string{l.dir("", id)}
		}
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(l.root, "*", cgroupParent, id))
	return dirs
}

// rmdirAll removes the directories it can and returns those still busy.
// The container's delete writes go first (v1: thaw, as killed tasks
// cannot exit frozen; v2: cgroup.kill); they are not waited for, the next
// try is.
func rmdirAll(l Layout, id string, dirs []string) []string {
	for _, w := range l.deleteWrites(id) {
		_ = applyCgroupWrites([]cgroupWrite{w})
	}
	var busy []string
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			busy = append(busy, d)
		}
	}
	return busy
}
