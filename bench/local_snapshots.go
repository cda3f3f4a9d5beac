package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Snapshots on the local engine (issue 16): a snapshot of a 100 MiB
// workspace, a fork of 64 sandboxes from it (cold, and from a warm pool
// that names the snapshot), and restores.

const (
	forkPool     = "forks"      // the bench server's pool of forks (configYAML)
	forkSnapshot = "bench-seed" // the snapshot it names
	forkCount    = 64
)

// onlySnapshots runs just these rows in the local suite (-only-snapshots).
var onlySnapshots = flag.Bool("only-snapshots", false, "in the local suite, run only the snapshot, fork and restore rows (issue 16)")

type snapSeries struct {
	take, forkCold, forkWarm, restoreFiles, restoreReady series
	method                                               string
	run                                                  int
}

// snapshotPhase runs once per run: it makes a sandbox with 100 MiB in its
// workspace, snapshots it, forks it, restores a fork, and removes all it made.
func (l *localSuite) snapshotPhase(ctx context.Context) error {
	resp, err := l.api.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: template})
	if err != nil {
		return fmt.Errorf("snapshot source: %w", err)
	}
	box := resp.GetSandbox().GetName()
	defer l.deleteAll(context.WithoutCancel(ctx), []string{box})
	if _, err := l.writeFile(ctx, box, "seed/data", l.data[:100*mib]); err != nil {
		return err
	}

	// The measured snapshot has a name of its own per run and is deleted
	// at its end; the pool of forks names forkSnapshot, taken once (a
	// snapshot a pool names cannot be deleted).
	l.snap.run++
	snapName := fmt.Sprintf("bench-snap-%d", l.snap.run)
	t0 := time.Now()
	sresp, err := l.api.SnapshotSandbox(ctx, &sandpodv1.SnapshotSandboxRequest{Sandbox: box, Name: snapName})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	l.snap.take.addRun([]float64{ms1(time.Since(t0))})
	l.snap.method = sresp.GetSnapshot().GetStorage()
	defer func() {
		if _, err := l.api.DeleteSnapshot(context.WithoutCancel(ctx), &sandpodv1.DeleteSnapshotRequest{Name: snapName}); err != nil {
			l.log("delete snapshot %s: %v", snapName, err)
		}
	}()
	if l.snap.run == 1 {
		if _, err := l.api.SnapshotSandbox(ctx, &sandpodv1.SnapshotSandboxRequest{Sandbox: box, Name: forkSnapshot}); err != nil {
			return fmt.Errorf("snapshot for the pool: %w", err)
		}
	}

	// Cold: 64 new sandboxes, each an overlay over the snapshot (or a copy).
	t0 = time.Now()
	fresp, err := l.api.ForkSandbox(ctx, &sandpodv1.ForkSandboxRequest{Snapshot: snapName, Count: forkCount})
	if err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	l.snap.forkCold.addRun([]float64{ms1(time.Since(t0))})
	forks := names(fresp.GetSandboxes())
	if err := allRunning(fresp.GetSandboxes()); err != nil {
		l.deleteAll(ctx, forks)
		return err
	}

	// Restore one fork after a change, files only (no_wait) and until it runs.
	var files, ready []time.Duration
	for i := 0; i < max(l.p.SuspendCycle, 2); i++ {
		target := forks[0]
		t0 = time.Now()
		if _, err := l.api.RestoreSandbox(ctx, &sandpodv1.RestoreSandboxRequest{Name: target, Snapshot: snapName, NoWait: i%2 == 0}); err != nil {
			l.deleteAll(ctx, forks)
			return fmt.Errorf("restore: %w", err)
		}
		d := time.Since(t0)
		if i%2 == 0 {
			files = append(files, d)
			if err := l.waitRunning(ctx, target); err != nil {
				l.deleteAll(ctx, forks)
				return err
			}
		} else {
			ready = append(ready, d)
		}
	}
	l.snap.restoreFiles.addRun(ms(files))
	l.snap.restoreReady.addRun(ms(ready))
	l.deleteAll(ctx, forks)

	// Warm: the same fork from a full pool whose members are forks.
	if _, err := l.api.ScaleWarmPool(ctx, &sandpodv1.ScaleWarmPoolRequest{Name: forkPool, Replicas: forkCount}); err != nil {
		return fmt.Errorf("scale the pool of forks: %w", err)
	}
	defer func() {
		_, _ = l.api.ScaleWarmPool(context.WithoutCancel(ctx), &sandpodv1.ScaleWarmPoolRequest{Name: forkPool, Replicas: 0})
	}()
	if err := l.waitPoolOf(ctx, forkPool, forkCount); err != nil {
		return err
	}
	t0 = time.Now()
	fresp, err = l.api.ForkSandbox(ctx, &sandpodv1.ForkSandboxRequest{Snapshot: forkSnapshot, Count: forkCount})
	if err != nil {
		return fmt.Errorf("warm fork: %w", err)
	}
	d := time.Since(t0)
	forks = names(fresp.GetSandboxes())
	defer l.deleteAll(context.WithoutCancel(ctx), forks)
	warm := 0
	for _, sb := range fresp.GetSandboxes() {
		if sb.GetPool() == forkPool {
			warm++
		}
	}
	if warm == forkCount {
		l.snap.forkWarm.addRun([]float64{ms1(d)})
	} else {
		l.log("warm fork: only %d of %d came from the pool; left out", warm, forkCount)
	}
	return allRunning(fresp.GetSandboxes())
}

func ms1(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func names(sbs []*sandpodv1.Sandbox) []string {
	out := make([]string, len(sbs))
	for i, sb := range sbs {
		out[i] = sb.GetName()
	}
	return out
}

func allRunning(sbs []*sandpodv1.Sandbox) error {
	for _, sb := range sbs {
		if sb.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
			return fmt.Errorf("fork %s is %s, want RUNNING", sb.GetName(), sb.GetPhase())
		}
	}
	return nil
}

func (l *localSuite) deleteAll(ctx context.Context, boxes []string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, n := range boxes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, _ = l.api.DeleteSandbox(ctx, &sandpodv1.DeleteSandboxRequest{Name: n})
		})
	}
	wg.Wait()
}

func (l *localSuite) waitRunning(ctx context.Context, name string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := l.api.GetSandbox(ctx, &sandpodv1.GetSandboxRequest{Name: name})
		if err != nil {
			return err
		}
		if resp.GetSandbox().GetPhase() == sandpodv1.Phase_PHASE_RUNNING {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not running 2m after a restore: %s", name, resp.GetSandbox().GetMessage())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *localSuite) waitPoolOf(ctx context.Context, name string, n int32) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := l.api.GetWarmPool(ctx, &sandpodv1.GetWarmPoolRequest{Name: name})
		if err != nil {
			return err
		}
		if wp := resp.GetWarmPool(); wp.GetReadyReplicas() >= n && wp.GetPendingReplicas() == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pool %s not full after 5m", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// snapshotRows are the rows of issue 16 with their targets.
func (l *localSuite) snapshotRows() []Row {
	how := l.snap.method
	row := func(fig string, s *series, target string, limit float64, note string) Row {
		p50, p99, runs := s.latencyStats()
		r := Row{Section: "local", Figure: fig, Kind: "latency", Unit: "ms", P50: p50, P99: p99,
			Samples: s.samples(), Runs: len(runs), PerRun: runs, Target: target, Note: note}
		if limit > 0 {
			r.Met = boolp(p50 <= limit)
		}
		return r
	}
	return []Row{
		row("snapshot of a 100 MiB workspace", &l.snap.take, "", 0,
			"SnapshotSandbox of a running sandbox holding one 100 MiB file; the files are copied (reflinks where the file system has them)"),
		row(fmt.Sprintf("fork of %d, all ready (cold)", forkCount), &l.snap.forkCold, "≤ 2 s", 2000,
			fmt.Sprintf("ForkSandbox count=%d from that snapshot, returns when all run; workspaces by %s; bound by %d container starts on this machine's cores", forkCount, how, forkCount)),
		row(fmt.Sprintf("fork of %d, all ready (warm pool of forks)", forkCount), &l.snap.forkWarm, "≤ 2 s", 2000,
			fmt.Sprintf("ForkSandbox count=%d with a full warm pool that names the snapshot: its members are adopted", forkCount)),
		row("restore (files back)", &l.snap.restoreFiles, "≤ 100 ms", 100,
			"RestoreSandbox no_wait of a fork after a change: processes stopped, workspace back to the snapshot; returns before the sandbox runs again"),
		row("restore (ready)", &l.snap.restoreReady, "≤ 100 ms", 100,
			"RestoreSandbox until the sandbox runs again on the restored files (a process restart)"),
	}
}
