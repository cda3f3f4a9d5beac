package cgroups

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// randomHex is 32 random hex digits, for container ids of tests.
func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func TestContainerIDPattern(t *testing.T) {
	for id, want := range map[string]bool{
		"sb-0123456789abcdef-01234567": true,
		"sb-0123456789abcdef":          true, // ids before the per-start suffix
		"sb-0123456789abcdef-0123456":  false,
		"sb-../../memory":              false,
		"":                             false,
		"sb-0123456789ABCDEF-01234567": false,
		"x-0123456789abcdef-01234567":  false,
	} {
		if got := ContainerIDPattern.MatchString(id); got != want {
			t.Errorf("%q: %v, want %v", id, got, want)
		}
	}
}

// A cgroup whose last process is still exiting when runc deletes the
// container is removed once the process is gone. Real kernel, the host's
// layout (v1: the pids hierarchy; v2: the unified one).
func TestRemoveCgroupsWaitsForTheLastProcess(t *testing.T) {
	l := Host(HostRoot)
	parent := filepath.Dir(l.dir("pids", "x"))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatalf("the engine's cgroup parent on this host: %v", err)
	}
	id := "sb-" + randomHex()[:16] + "-" + randomHex()[:8]
	dir := filepath.Join(parent, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	sleeper := sleepIn(t, dir)

	l.Remove(id) // busy: left to the background retry
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the cgroup of a live process went: %v", err)
	}
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()
	// What Engine.Close waits for: the background removal, done.
	if !AwaitPendingRemovals(Retry + 5*time.Second) {
		t.Fatalf("the background removal still runs %s after the last process exited", Retry)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there after the background removal finished: %v", dir, err)
	}
}

// An engine's start removes empty container cgroups that an earlier
// process left (it exited while their removal was pending), but never one
// with a process in it, nor one that gets its first process meanwhile (a
// container being born).
func TestStrayCgroupsAreRemovedOnlyWhenStillEmpty(t *testing.T) {
	l := Host(HostRoot)
	parent := filepath.Dir(l.dir("pids", "x"))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatalf("the engine's cgroup parent on this host: %v", err)
	}
	mk := func() string {
		dir := filepath.Join(parent, "sb-"+randomHex()[:16]+"-"+randomHex()[:8])
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(dir) })
		return dir
	}
	stray, busy, born := mk(), mk(), mk()
	sleepIn(t, busy)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Only this test's cgroups: a sweep of the machine's with a short
		// delay could race containers that tests alongside are starting.
		removeIfStillEmpty([]string{stray, busy, born}, 2*time.Second)
	}()
	time.Sleep(200 * time.Millisecond) // born was empty when listed
	sleepIn(t, born)
	<-done
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("an empty cgroup is still there: %v", err)
	}
	for _, d := range []string{busy, born} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s went: %v", d, err)
		}
	}
}

// sleepIn starts a process in the cgroup dir, killed when the test ends.
func sleepIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	return sleeper
}

// Removals may begin while an earlier wait (a Close that timed out) is
// still pending: with a sync.WaitGroup this panicked ("reused before
// previous Wait has returned") within a few thousand rounds.
func TestPendingRemovalsTolerateAddsDuringWaits(t *testing.T) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		cgroupRemovals.Add(1)
		go func() { time.Sleep(time.Microsecond); cgroupRemovals.Done() }()
		AwaitPendingRemovals(time.Microsecond)
	}
	if !AwaitPendingRemovals(10 * time.Second) {
		t.Fatal("still pending after every Done")
	}
}
