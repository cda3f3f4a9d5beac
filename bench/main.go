// Command bench measures sandpod and prints one Markdown table (and the same
// figures as JSON under -out). Run it as `go run ./bench` from the module
// root, or through `make bench`.
//
// Today it measures the local engine (`sandpod serve`) through the bridge
// with the generated gRPC client, so the figures are the server's cost, not
// a client library's. The Kubernetes suites add rows to the same Report.
//
// Every figure is the median over -repeats runs of that run's p50 (and p99);
// nothing here is a test and nothing asserts a time.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat CPU times.
const clockTicks = 100

func main() {
	out := flag.String("out", "_output/bench", "directory for the JSON results (and profiles)")
	quick := flag.Bool("quick", false, "a short run: fewer repeats and samples (the local suite well under 2 minutes, kwok about 3)")
	repeats := flag.Int("repeats", 0, "repeated runs per figure (default 5, or 2 with -quick)")
	bin := flag.String("bin", "bin/sandpod", "sandpod binary (built from ./cmd/sandpod when missing)")
	execSeconds := flag.Duration("exec-for", 0, "length of each exec-throughput run (default 5s, or 2s with -quick)")
	profile := flag.Bool("profile", false, "start the server with --pprof and capture CPU profiles during the last exec-throughput run")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, *out, *quick, *repeats, *execSeconds, *bin, *profile))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func run(ctx context.Context, out string, quick bool, repeats int, execFor time.Duration, bin string, withProfile bool) int {
	p := defaultParams(quick)
	if repeats > 0 {
		p.Repeats = repeats
	}
	if execFor > 0 {
		p.ThroughFor = execFor
	}
	p.PoolSize = p.WarmClaims + 4
	profileDir = out

	rep := &Report{Started: time.Now(), Command: "go run ./bench " + strings.Join(os.Args[1:], " "), Params: p}
	rep.Machine = machine()
	logf("machine: %d × %s, kernel %s; load before: %s", rep.Machine.CPUs, rep.Machine.Model, rep.Machine.Kernel, rep.Machine.LoadBefore)

	suites, err := parseSuites(*suitesFlag)
	if err != nil {
		logf("-suites: %v", err)
		return 2
	}
	binPath, err := ensureBinary(bin)
	if err != nil {
		logf("%v", err)
		return 1
	}
	var suite *localSuite
	var kwok *kwokDetails
	for _, name := range suiteOrder {
		if !suites[name] {
			continue
		}
		var o suiteOutcome
		switch name {
		case "local":
			suite, o = runLocal(ctx, rep, p, binPath, withProfile)
		case "kwok":
			kwok, o = runKwokSuite(ctx, rep, quick, repeats, binPath, out, withProfile)
		case "testbed":
			o = runTestbedSuite(ctx, rep, *testbedKubeconfig, ".venv/bin/python", quick)
		}
		if ctx.Err() != nil && o.State == suiteRan {
			o = outcomeOf(name, []string{"interrupted"})
		}
		rep.Outcomes = append(rep.Outcomes, o)
	}
	rep.Finished = time.Now()
	rep.Machine.LoadAfter = loadavg()
	rep.Rows = settleRows(rep.Rows)
	code, reasons := exitStatus(rep.Outcomes, rep.Rows)

	fmt.Printf("sandpod benchmark — %s\n\n", rep.Started.Format(time.RFC3339))
	fmt.Print(rep.Markdown())
	fmt.Printf("\nMachine: %d × %s, Linux %s, %s. Load average before: %s; after: %s.\n",
		rep.Machine.CPUs, rep.Machine.Model, rep.Machine.Kernel, rep.Machine.Go, rep.Machine.LoadBefore, rep.Machine.LoadAfter)
	fmt.Printf("p50: median over its runs of each run's p50; p99: the 99th percentile of all runs' samples pooled (what a p99 target is judged on), beside the median of the per-run p99s; samples = all measurements over all runs. \"missing\": no samples (a row with a target then is not met).\n")
	for _, n := range rep.Notes {
		fmt.Printf("- %s\n", n)
	}
	for _, o := range rep.Outcomes {
		fmt.Printf("- suite %s: %s\n", o.Suite, o.State)
	}
	if suite != nil && suite.profile != nil {
		fmt.Printf("\nCPU profiles of the last exec-throughput run: %s, %s\n", suite.profile.ServerFile, suite.profile.ClientFile)
		if suite.profile.Err != "" {
			fmt.Printf("profile error: %s\n", suite.profile.Err)
		}
		fmt.Printf("\nserver (sandpod serve), go tool pprof -top:\n```\n%s\n```\n", head(suite.profile.ServerTop, 32))
	}
	if kwok != nil {
		kwok.printProfiles()
	}
	var localProfile *profileCapture
	if suite != nil {
		localProfile = suite.profile
	}
	rep.Params = struct {
		localParams
		Profile any          `json:"profile,omitempty"`
		Kwok    *kwokDetails `json:"kwok,omitempty"`
	}{p, localProfile, kwok}
	name, err := rep.WriteJSON(out)
	if err != nil {
		logf("write JSON: %v", err)
		return 1
	}
	fmt.Printf("\nJSON: %s (and %s/latest.json); took %s\n", name, out, rep.Finished.Sub(rep.Started).Round(time.Second))
	for _, r := range reasons {
		fmt.Printf("INCOMPLETE: %s\n", r)
		logf("incomplete: %s", r)
	}
	return code
}

// suiteOrder is the order the suites run in.
var suiteOrder = []string{"local", "kwok", "testbed"}

// runLocal runs the local-engine suite and adds its rows and notes to rep
// (also what it measured before a failure: rows with a target that it did
// not reach show as missing).
func runLocal(ctx context.Context, rep *Report, p localParams, binPath string, withProfile bool) (*localSuite, suiteOutcome) {
	s, err := startServer(ctx, binPath, p.PoolSize, withProfile)
	if s != nil {
		defer func() {
			for _, n := range s.cleanup(pool) {
				logf("%s", n)
				rep.Notes = append(rep.Notes, n)
			}
		}()
	}
	if err != nil {
		logf("start server: %v", err)
		return nil, suiteOutcome{Suite: "local", State: suiteSkipped, Why: []string{fmt.Sprintf("start server: %v", err)}}
	}
	logf("sandpod serve at %s (state %s), warm pool of %d", s.addr, s.dir, p.PoolSize)

	suite := &localSuite{p: p, s: s, api: s.api, log: logf}
	t0 := time.Now()
	failed := []string(nil)
	if err := suite.run(ctx); err != nil {
		logf("local engine: %v", err)
		logf("server log tail:\n%s", tail(s.log(), 30))
		failed = append(failed, fmt.Sprintf("stopped early: %v", err))
		rep.Notes = append(rep.Notes, fmt.Sprintf("local suite stopped early: %v (its rows are from what finished)", err))
	}
	logf("local engine suite took %s", time.Since(t0).Round(time.Second))
	rep.Rows = append(rep.Rows, suite.rows()...)
	rep.Notes = append(rep.Notes, suite.skipped...)
	failed = append(failed, suite.skipped...)
	for i, c := range suite.cpu {
		rep.Notes = append(rep.Notes, fmt.Sprintf("exec throughput run %d: %d execs in %.1fs; CPU per exec: server %.2f ms, agent+children %.2f ms, bench client %.2f ms; machine busy %.2f of %d cores",
			i+1, c.Execs, c.Seconds, c.ServerCPUms, c.AgentCPUms, c.BenchCPUms, c.MachineBusy, c.MachineCores))
	}
	return suite, outcomeOf("local", failed)
}

func machine() Machine {
	m := Machine{CPUs: ncpu(), Go: runtime.Version(), LoadBefore: loadavg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func ncpu() int { return runtime.NumCPU() }

// loadavg is the 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// machineTicks returns busy and total CPU ticks of the whole machine.
func machineTicks() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		if i >= 8 { // guest time is already counted in user time
			break
		}
		var n int64
		fmt.Sscan(v, &n)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func head(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
