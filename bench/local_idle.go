package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

var (
	idleSandboxes = flag.Int("idle-sandboxes", 20, "in the local suite, how many idle sandboxes the memory-per-idle-sandbox rows keep alive at once (0: leave the rows out)")
	idleWindow    = flag.Duration("idle-window", 30*time.Second, "how long the idle sandboxes are watched for wakeups")
	onlyIdle      = flag.Bool("only-idle", false, "in the local suite, run only the idle-sandbox memory and wakeup rows (issue 34)")
)

// idleResult is what one idle phase measured.
type idleResult struct {
	n                  int
	pssKiB             int64            // PSS of every process serve started for them (none is user code)
	byComm             map[string]int64 // the same, per process name
	procs              int
	servePSSKiB        int64 // serve's own PSS growth
	availKiB           int64 // the drop in MemAvailable
	wakeups            int64 // context switches of those processes over the window
	window             time.Duration
	byCommWakeups      map[string]int64
	left               []string // processes still running after the deletes
	measured, finished bool
}

// idlePhase starts N sandboxes of the python template (no command: nothing
// of the user runs), lets them settle, and measures what they hold and how
// often their processes wake; then deletes them and checks that every
// process serve started for them is gone.
func (l *localSuite) idlePhase(ctx context.Context) error {
	n := *idleSandboxes
	r := &l.idle
	r.n = n
	servePID := l.s.cmd.Process.Pid
	// The pool full first: its members are not this phase's, and none
	// starts while it measures.
	if err := l.waitPoolFull(ctx); err != nil {
		return err
	}
	before := listProcs()
	base := map[int]bool{}
	for _, p := range descendants(before, servePID) {
		base[p.pid] = true // pool members: not this phase's
	}
	serve0, avail0 := rollupKiB(servePID, "Pss"), memAvailableKiB()
	var made []string
	defer func() {
		for _, name := range made {
			_, _ = l.api.DeleteSandbox(context.Background(), &sandpodv1.DeleteSandboxRequest{Name: name})
		}
	}()
	for i := 0; i < n; i++ {
		resp, err := l.api.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: template})
		if err != nil {
			return fmt.Errorf("idle sandbox %d/%d: %w", i+1, n, err)
		}
		made = append(made, resp.GetSandbox().GetName())
	}
	// Settle: start-up garbage collected and returned (the Go runtime's
	// scavenger), page cache of the start read.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
	}
	var ours []proc
	for _, p := range descendants(listProcs(), servePID) {
		if !base[p.pid] {
			ours = append(ours, p)
		}
	}
	r.procs = len(ours)
	r.byComm, r.byCommWakeups = map[string]int64{}, map[string]int64{}
	sw0 := map[int]int64{}
	for _, p := range ours {
		pss := rollupKiB(p.pid, "Pss")
		r.pssKiB += pss
		r.byComm[procLabel(p)] += pss
		sw0[p.pid] = switches(p.pid)
	}
	r.servePSSKiB = rollupKiB(servePID, "Pss") - serve0
	r.availKiB = avail0 - memAvailableKiB()
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*idleWindow):
	}
	r.window = time.Since(t0)
	for _, p := range ours {
		if alive(p) {
			d := switches(p.pid) - sw0[p.pid]
			r.wakeups += d
			r.byCommWakeups[procLabel(p)] += d
		}
	}
	r.measured = true
	for _, name := range made {
		if _, err := l.api.DeleteSandbox(ctx, &sandpodv1.DeleteSandboxRequest{Name: name}); err != nil {
			return fmt.Errorf("delete idle sandbox %s: %w", name, err)
		}
	}
	made = nil
	// Every process serve started for them ends with them (a process the
	// kernel is still tearing down may show for a moment).
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.left = r.left[:0]
		for _, p := range ours {
			if alive(p) {
				r.left = append(r.left, fmt.Sprintf("%d (%s)", p.pid, p.comm))
			}
		}
		if len(r.left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.finished = true
	if len(r.left) > 0 {
		return fmt.Errorf("%d processes of deleted idle sandboxes still run 30 s after the deletes: %s", len(r.left), strings.Join(r.left, ", "))
	}
	return nil
}

// idleRows are the memory and wakeup figures per idle sandbox.
func (l *localSuite) idleRows() []Row {
	r := l.idle
	if *idleSandboxes <= 0 {
		return nil
	}
	samples := 0
	if r.measured {
		samples = 1
	}
	per := func(kib int64) float64 { return float64(kib) / 1024 / float64(max(r.n, 1)) }
	perMin := 0.0
	if r.window > 0 {
		perMin = float64(r.wakeups) / float64(max(r.n, 1)) / r.window.Minutes()
	}
	what := fmt.Sprintf("%d idle sandboxes of the python template (no command), 10 s after their start", r.n)
	return []Row{
		{Section: "local", Figure: "memory per idle sandbox, outside user code (PSS)", Kind: "memory", Unit: "MiB",
			P50: per(r.pssKiB), Samples: samples, Runs: samples, Target: "≤ 8 MiB", Met: boolp(r.measured && per(r.pssKiB) <= 8),
			Note: fmt.Sprintf("%s: sum of smaps_rollup Pss of the %d processes serve started for them / N (%s); serve's own PSS grew %.2f MiB per sandbox",
				what, r.procs, breakdown(r.byComm, func(v int64) string { return fmt.Sprintf("%.2f MiB", per(v)) }), per(r.servePSSKiB))},
		{Section: "local", Figure: "MemAvailable drop per idle sandbox", Kind: "memory", Unit: "MiB",
			P50: per(r.availKiB), Samples: samples, Runs: samples,
			Note: what + ": host-wide, so other work on the machine moves it"},
		{Section: "local", Figure: "wakeups per idle sandbox per minute", Kind: "count", Unit: "/min",
			P50: perMin, Samples: samples, Runs: samples,
			Note: fmt.Sprintf("context switches of those processes (every thread) over %s / N (%s); every process gone after the deletes: %v",
				r.window.Round(time.Second), breakdown(r.byCommWakeups, func(v int64) string {
					return fmt.Sprintf("%.1f/min", float64(v)/float64(max(r.n, 1))/max(r.window.Minutes(), 1e-9))
				}), r.finished && len(r.left) == 0)},
	}
}

// procLabel names a sandbox's process in the breakdown: the init runs the
// agent binary (comm sandpod or sandpod-agent) and starts the agent as
// /proc/self/exe (comm exe).
func procLabel(p proc) string {
	switch p.comm {
	case "exe":
		return "agent"
	case "sandpod", "sandpod-agent":
		return "init (" + p.comm + ")"
	}
	return p.comm
}

// breakdown lists a per-name figure, largest first: "pasta 45.1 MiB, ...".
func breakdown(m map[string]int64, f func(int64) string) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return m[names[i]] > m[names[j]] || (m[names[i]] == m[names[j]] && names[i] < names[j])
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + f(m[k])
	}
	return strings.Join(parts, ", ")
}
