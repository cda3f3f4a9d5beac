package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

const (
	template = "python"
	pool     = "python"
	mib      = 1 << 20
)

// localParams sizes one run of the local-engine suite.
type localParams struct {
	Repeats      int           `json:"repeats"`
	PoolSize     int           `json:"pool_size"`
	WarmClaims   int           `json:"warm_claims_per_run"`
	ColdCreates  int           `json:"cold_creates_per_run"`
	SuspendCycle int           `json:"suspend_resume_cycles_per_run"`
	PauseCycle   int           `json:"pause_resume_cycles_per_run"`
	Execs        int           `json:"sequential_execs_per_run"`
	Callers      int           `json:"concurrent_callers"`
	ThroughFor   time.Duration `json:"exec_throughput_duration_per_run"`
	Files1M      int           `json:"files_1mib_per_run"`
	Files100M    int           `json:"files_100mib_per_run"`
	ChunkSize    int           `json:"write_chunk_bytes"`
}

func defaultParams(quick bool) localParams {
	if quick {
		return localParams{Repeats: 2, WarmClaims: 6, ColdCreates: 2, SuspendCycle: 2, PauseCycle: 10, Execs: 40,
			Callers: 16, ThroughFor: 2 * time.Second, Files1M: 4, Files100M: 1, ChunkSize: mib}
	}
	return localParams{Repeats: 5, WarmClaims: 20, ColdCreates: 6, SuspendCycle: 6, PauseCycle: 30, Execs: 200,
		Callers: 16, ThroughFor: 5 * time.Second, Files1M: 20, Files100M: 3, ChunkSize: mib}
}

// localSuite measures the local engine through the bridge with the raw
// generated gRPC client.
type localSuite struct {
	p   localParams
	s   *server
	api sandpodv1.SandboxServiceClient
	log func(format string, args ...any)

	warm, cold, suspend, resume, del, exec1, execLoaded series
	code1, codeFirst                                    series
	pause, unpause                                      series
	rate                                                series
	floorSeq, floorRate                                 series
	floorCount                                          int
	w1, r1, w100, r100                                  series
	previewGet                                          series
	httpWarm, httpGet                                   series   // bench/local_http.go
	e2b                                                 e2bStats // bench/local_e2b.go
	skipped                                             []string // figures left out, and why
	coldClaims, httpCold                                int      // warm claims that came back cold (Go, HTTP)
	profile                                             *profileCapture
	cpu                                                 []cpuShare
	data                                                []byte
	tw                                                  termWatch
	snap                                                snapSeries // local_snapshots.go
	mcp                                                 mcpSeries  // local_mcp.go
	idle                                                idleResult // local_idle.go
}

// cpuShare is where the CPU went during one exec-throughput run.
type cpuShare struct {
	Execs        int64   `json:"execs"`
	Seconds      float64 `json:"seconds"`
	ServerCPUms  float64 `json:"server_cpu_ms_per_exec"`
	AgentCPUms   float64 `json:"agent_and_children_cpu_ms_per_exec"`
	BenchCPUms   float64 `json:"bench_client_cpu_ms_per_exec"`
	MachineBusy  float64 `json:"machine_busy_cores"`
	MachineCores int     `json:"machine_cores"`
}

func (l *localSuite) run(ctx context.Context) error {
	l.data = make([]byte, 100*mib)
	for i := range l.data {
		l.data[i] = byte(i*7 + i>>12)
	}
	if *onlyIdle {
		return l.idlePhase(ctx)
	}
	for r := 0; r < l.p.Repeats; r++ {
		l.log("run %d/%d", r+1, l.p.Repeats)
		if *onlySnapshots {
			if err := l.snapshotPhase(ctx); err != nil {
				return fmt.Errorf("run %d: %w", r+1, err)
			}
			continue
		}
		if err := l.runOnce(ctx, r == l.p.Repeats-1); err != nil {
			return fmt.Errorf("run %d: %w", r+1, err)
		}
		if err := l.httpClaims(ctx); err != nil {
			return fmt.Errorf("run %d: %w", r+1, err)
		}
		if err := l.mcpPhase(ctx); err != nil {
			return fmt.Errorf("run %d: %w", r+1, err)
		}
		if err := l.e2bSDK(ctx); err != nil {
			return fmt.Errorf("run %d: %w", r+1, err)
		}
	}
	if *idleSandboxes > 0 && !*onlySnapshots {
		return l.idlePhase(ctx)
	}
	return nil
}

// waitPoolFull waits until every pool member is ready and none is starting,
// so that claims are warm and no refill competes with what is measured.
func (l *localSuite) waitPoolFull(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := l.api.GetWarmPool(ctx, &sandpodv1.GetWarmPoolRequest{Name: pool})
		if err != nil {
			return err
		}
		wp := resp.GetWarmPool()
		if wp.GetReadyReplicas() >= wp.GetReplicas() && wp.GetPendingReplicas() == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("warm pool not full after 5m: %d/%d ready", wp.GetReadyReplicas(), wp.GetReplicas())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (l *localSuite) runOnce(ctx context.Context, last bool) error {
	var made []string // every sandbox this run made, deleted at its end
	// Warm claims: one after another, from a full pool.
	if err := l.waitPoolFull(ctx); err != nil {
		return err
	}
	var warm []time.Duration
	for i := 0; i < l.p.WarmClaims; i++ {
		t0 := time.Now()
		resp, err := l.api.ClaimSandbox(ctx, &sandpodv1.ClaimSandboxRequest{Template: template})
		d := time.Since(t0)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		made = append(made, resp.GetSandbox().GetName())
		if !resp.GetWarm() {
			l.coldClaims++ // not a warm figure: leave it out
			continue
		}
		warm = append(warm, d)
	}
	l.warm.addRun(ms(warm))

	// Cold creates, with the pool full again and idle.
	if err := l.waitPoolFull(ctx); err != nil {
		return err
	}
	var cold []time.Duration
	for i := 0; i < l.p.ColdCreates; i++ {
		t0 := time.Now()
		resp, err := l.api.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: template})
		d := time.Since(t0)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		if ph := resp.GetSandbox().GetPhase(); ph != sandpodv1.Phase_PHASE_RUNNING {
			return fmt.Errorf("create returned %s, want RUNNING", ph)
		}
		made = append(made, resp.GetSandbox().GetName())
		cold = append(cold, d)
	}
	l.cold.addRun(ms(cold))
	if len(made) < 3 {
		return errors.New("need at least 3 sandboxes per run (warm claims + cold creates)")
	}
	execBox, cycleBox, fileBox := made[0], made[1], made[2]

	// Exec round trip of `true`, one at a time.
	for i := 0; i < 10; i++ { // warm-up: agent connection, page cache
		if _, err := l.execTrue(ctx, execBox); err != nil {
			return err
		}
	}
	var ex []time.Duration
	for i := 0; i < l.p.Execs; i++ {
		d, err := l.execTrue(ctx, execBox)
		if err != nil {
			return err
		}
		ex = append(ex, d)
	}
	l.exec1.addRun(ms(ex))
	if err := l.measureTermWatch(ctx, execBox); err != nil {
		return err
	}

	// Execs per second with concurrent callers on one sandbox.
	if err := l.throughput(ctx, execBox, last); err != nil {
		return err
	}

	// A small GET through a preview URL of the same sandbox.
	if err := l.previewGets(ctx, execBox); err != nil {
		return fmt.Errorf("preview: %w", err)
	}

	// The floor: the same `true`, started by os/exec from this process with
	// no sandbox, bridge or gRPC, under the same machine load.
	if err := l.floor(ctx); err != nil {
		return err
	}

	// run_code: the first call in the fresh sandboxes, then warm round trips.
	if err := l.codeRuns(ctx, made[3:min(len(made), 8)], execBox); err != nil {
		return err
	}

	// Suspend and resume, cycle after cycle on one sandbox.
	var su, re []time.Duration
	for i := 0; i < l.p.SuspendCycle; i++ {
		t0 := time.Now()
		if _, err := l.api.SuspendSandbox(ctx, &sandpodv1.SuspendSandboxRequest{Name: cycleBox}); err != nil {
			return fmt.Errorf("suspend: %w", err)
		}
		su = append(su, time.Since(t0))
		t0 = time.Now()
		resp, err := l.api.ResumeSandbox(ctx, &sandpodv1.ResumeSandboxRequest{Name: cycleBox})
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		re = append(re, time.Since(t0))
		if ph := resp.GetSandbox().GetPhase(); ph != sandpodv1.Phase_PHASE_RUNNING {
			return fmt.Errorf("resume returned %s, want RUNNING", ph)
		}
	}
	if _, err := l.execTrue(ctx, cycleBox); err != nil {
		return fmt.Errorf("exec after resume: %w", err)
	}
	l.suspend.addRun(ms(su))
	l.resume.addRun(ms(re))
	if err := l.pauseCycles(ctx, cycleBox); err != nil {
		return err
	}

	// File write and read throughput.
	for _, f := range []struct {
		size  int
		n     int
		w, r  *series
		label string
	}{{mib, l.p.Files1M, &l.w1, &l.r1, "1m"}, {100 * mib, l.p.Files100M, &l.w100, &l.r100, "100m"}} {
		var ws, rs []float64
		for i := 0; i < f.n; i++ {
			path := fmt.Sprintf("bench/%s-%d", f.label, i)
			d, err := l.writeFile(ctx, fileBox, path, l.data[:f.size])
			if err != nil {
				return err
			}
			ws = append(ws, float64(d)/float64(time.Millisecond))
			d, err = l.readFile(ctx, fileBox, path, f.size)
			if err != nil {
				return err
			}
			rs = append(rs, float64(d)/float64(time.Millisecond))
		}
		f.w.addRun(ws)
		f.r.addRun(rs)
	}

	// Snapshots, forks and restores (local_snapshots.go).
	if err := l.snapshotPhase(ctx); err != nil {
		return err
	}

	// Deletes end the run.
	var dl []time.Duration
	for _, n := range made {
		t0 := time.Now()
		if _, err := l.api.DeleteSandbox(ctx, &sandpodv1.DeleteSandboxRequest{Name: n}); err != nil {
			return fmt.Errorf("delete %s: %w", n, err)
		}
		dl = append(dl, time.Since(t0))
	}
	l.del.addRun(ms(dl))
	return nil
}

// execTrue runs `true` and returns the time from opening the stream to the
// ExitStatus.
func (l *localSuite) execTrue(ctx context.Context, box string) (time.Duration, error) {
	t0 := time.Now()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := l.api.Exec(cctx)
	if err != nil {
		return 0, fmt.Errorf("exec: %w", err)
	}
	if err := st.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{
		Sandbox: box, Argv: []string{"true"}, Timeout: durationpb.New(30 * time.Second)}}}); err != nil {
		_, rerr := st.Recv()
		return 0, fmt.Errorf("exec send: %v / %v", err, rerr)
	}
	_ = st.CloseSend()
	for {
		msg, err := st.Recv()
		if err != nil {
			return 0, fmt.Errorf("exec recv before exit status: %w", err)
		}
		if ex := msg.GetExit(); ex != nil {
			d := time.Since(t0)
			if ex.GetExitCode() != 0 {
				return 0, fmt.Errorf("exec true: exit %d signal %d", ex.GetExitCode(), ex.GetSignal())
			}
			// Drain the end of the stream (not timed).
			for {
				if _, err := st.Recv(); err != nil {
					break
				}
			}
			return d, nil
		}
	}
}

func (l *localSuite) throughput(ctx context.Context, box string, last bool) error {
	var prof *profileCapture
	if last && l.s.pprof != "" {
		prof = startProfile(l.s, l.p.ThroughFor)
	}
	agentPIDs := procsUnder(filepath.Join(l.s.dir, "state"))
	var cpu0, cpu1 int64
	srv0 := cpuTicks(l.s.cmd.Process.Pid)
	for _, p := range agentPIDs {
		cpu0 += cpuTicks(p)
	}
	self0 := cpuTicks(os.Getpid())
	busy0, total0 := machineTicks()

	var n atomic.Int64
	var mu sync.Mutex
	var lat []float64
	var firstErr error
	tctx, cancel := context.WithTimeout(ctx, l.p.ThroughFor)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < l.p.Callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []float64
			for tctx.Err() == nil {
				d, err := l.execTrue(ctx, box)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					break
				}
				n.Add(1)
				mine = append(mine, float64(d)/float64(time.Millisecond))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if firstErr != nil {
		return firstErr
	}
	srv1 := cpuTicks(l.s.cmd.Process.Pid)
	for _, p := range agentPIDs {
		cpu1 += cpuTicks(p)
	}
	self1 := cpuTicks(os.Getpid())
	busy1, total1 := machineTicks()
	count := n.Load()
	l.rate.addRun([]float64{float64(count) / el.Seconds()})
	l.execLoaded.addRun(lat)
	tick := 1000.0 / float64(clockTicks) // ms per tick
	per := func(t int64) float64 { return float64(t) * tick / float64(max(count, 1)) }
	share := cpuShare{Execs: count, Seconds: el.Seconds(), ServerCPUms: per(srv1 - srv0),
		AgentCPUms: per(cpu1 - cpu0), BenchCPUms: per(self1 - self0), MachineCores: ncpu()}
	if total1 > total0 {
		share.MachineBusy = float64(busy1-busy0) / float64(total1-total0) * float64(ncpu())
	}
	l.cpu = append(l.cpu, share)
	if prof != nil {
		l.profile = prof.wait()
	}
	return nil
}

// floor measures fork+exec+wait of `true` from Go: what no exec path can
// beat on this machine.
func (l *localSuite) floor(ctx context.Context) error {
	run := func() (time.Duration, error) {
		t0 := time.Now()
		err := exec.CommandContext(ctx, "true").Run()
		return time.Since(t0), err
	}
	var seq []time.Duration
	for i := 0; i < l.p.Execs; i++ {
		d, err := run()
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		seq = append(seq, d)
	}
	l.floorSeq.addRun(ms(seq))
	var n atomic.Int64
	tctx, cancel := context.WithTimeout(ctx, l.p.ThroughFor)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < l.p.Callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tctx.Err() == nil {
				if _, err := run(); err == nil {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	l.floorRate.addRun([]float64{float64(n.Load()) / time.Since(start).Seconds()})
	l.floorCount += int(n.Load())
	return nil
}

func (l *localSuite) writeFile(ctx context.Context, box, path string, data []byte) (time.Duration, error) {
	t0 := time.Now()
	st, err := l.api.WriteFile(ctx)
	if err != nil {
		return 0, fmt.Errorf("write: %w", err)
	}
	if err := st.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Header{Header: &sandpodv1.WriteFileHeader{
		Sandbox: box, Path: path, MakeParents: true}}}); err != nil {
		_, rerr := st.CloseAndRecv()
		return 0, fmt.Errorf("write header: %v / %v", err, rerr)
	}
	for off := 0; off < len(data); off += l.p.ChunkSize {
		end := min(off+l.p.ChunkSize, len(data))
		if err := st.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Data{Data: data[off:end]}}); err != nil {
			_, rerr := st.CloseAndRecv()
			return 0, fmt.Errorf("write data: %v / %v", err, rerr)
		}
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return 0, fmt.Errorf("write close: %w", err)
	}
	d := time.Since(t0)
	if got := resp.GetFile().GetSize(); got != int64(len(data)) {
		return 0, fmt.Errorf("write %s: size %d, want %d", path, got, len(data))
	}
	return d, nil
}

func (l *localSuite) readFile(ctx context.Context, box, path string, size int) (time.Duration, error) {
	t0 := time.Now()
	st, err := l.api.ReadFile(ctx, &sandpodv1.ReadFileRequest{Sandbox: box, Path: path})
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	got := 0
	for {
		msg, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", path, err)
		}
		got += len(msg.GetData())
	}
	d := time.Since(t0)
	if got != size {
		return 0, fmt.Errorf("read %s: %d bytes, want %d", path, got, size)
	}
	return d, nil
}

// rows turns the series into table rows, each with the local engine's
// target for it (docs/performance.md).
func (l *localSuite) rows() []Row {
	if *onlySnapshots {
		return l.snapshotRows()
	}
	if *onlyIdle {
		return l.idleRows()
	}
	lat := func(fig string, s *series, target string, check func(p50, p99 float64) bool, note string) Row {
		p50, p99, runs := s.latencyStats()
		r := Row{Section: "local", Figure: fig, Kind: "latency", Unit: "ms", P50: p50, P99: p99,
			Samples: s.samples(), Runs: len(runs), PerRun: runs, Target: target, Note: note}
		if check != nil {
			r.Met = boolp(check(p50, p99))
		}
		return r
	}
	// Transfers: the rate at the median time (median over runs) and at the
	// 99th-percentile time of all runs pooled.
	xfer := func(fig string, s *series, size float64) Row {
		var runs []RunStat
		var a []float64
		for _, rr := range s.runs {
			if len(rr) == 0 {
				continue
			}
			p50 := size / (percentile(rr, 50) / 1000)
			p99 := size / (percentile(rr, 99) / 1000)
			runs = append(runs, RunStat{Samples: len(rr), P50: p50, P99: p99})
			a = append(a, p50)
		}
		return Row{Section: "local", Figure: fig, Kind: "rate", Unit: "MiB/s", P50: median(a), P99: size / (percentile(s.pooled, 99) / 1000),
			Samples: s.samples(), Runs: len(runs), PerRun: runs,
			Note: "p50 = size / median transfer time; p99 = size / 99th-percentile (slowest) time"}
	}
	rateOf := func(s *series) (float64, []RunStat) {
		var rates []float64
		var runs []RunStat
		for _, rr := range s.runs {
			rates = append(rates, rr[0])
			runs = append(runs, RunStat{Samples: 1, Value: rr[0]})
		}
		return median(rates), runs
	}
	rate, runs := rateOf(&l.rate)
	floorRate, floorRuns := rateOf(&l.floorRate)
	execs := 0
	for _, rr := range l.execLoaded.runs {
		execs += len(rr)
	}
	var ratios []float64
	for i := range l.rate.runs {
		if i < len(l.floorRate.runs) && l.floorRate.runs[i][0] > 0 {
			ratios = append(ratios, l.rate.runs[i][0]/l.floorRate.runs[i][0])
		}
	}
	rateRow := Row{Section: "local", Figure: fmt.Sprintf("execs per second, %d concurrent callers", l.p.Callers),
		Kind: "rate", Unit: "execs/s", P50: rate, Samples: execs, Runs: len(runs), PerRun: runs,
		Target: "≥ 2,000/s", Met: boolp(rate >= 2000),
		Note: fmt.Sprintf("`true` on one sandbox, %s per run; p50 = median over runs of execs/s; %s of the bare os/exec floor (median of per-run ratios)",
			l.p.ThroughFor, fmtNum(100*median(ratios), "%"))}
	floorRow := Row{Section: "floor", Figure: fmt.Sprintf("bare os/exec `true`, %d goroutines (no sandpod)", l.p.Callers),
		Kind: "rate", Unit: "execs/s", P50: floorRate, Samples: l.floorCount, Runs: len(floorRuns), PerRun: floorRuns,
		Note: "fork+exec+wait from the benchmark process, same run, same load: the ceiling of any exec path here"}
	floorSeq := lat("bare os/exec `true`, one at a time (no sandpod)", &l.floorSeq, "", nil, "the floor under the exec round trip")
	floorSeq.Section = "floor"
	warm := lat("warm claim (Go, raw gRPC)", &l.warm, "— (≤ 3 ms is for the Python client)", nil,
		"ClaimSandbox from a full pool, resp.warm checked")
	warm.LeftOut, warm.LeftOutWhat = l.coldClaims, "cold"
	httpWarm := lat("warm claim over HTTP/JSON (Python httpx)", &l.httpWarm, "p50 ≤ 5 ms", func(p50, _ float64) bool { return p50 <= 5 },
		"POST /v1/sandboxes:claim on one keep-alive httpx.Client, timed in Python (bench/http_claims.py), from a full pool")
	httpWarm.LeftOut, httpWarm.LeftOutWhat = l.httpCold, "cold"
	return append([]Row{
		warm,
		httpWarm,
		lat("GET a sandbox over HTTP/JSON (Python httpx)", &l.httpGet, "", nil,
			"GET /v1/sandboxes/{name}, same client: a small call's round trip, what the HTTP layer costs"),
		lat("cold create (ready)", &l.cold, "", nil, "CreateSandbox, waits until RUNNING"),
		lat("suspend", &l.suspend, "", nil, ""),
		lat("resume (ready)", &l.resume, "", nil, "ResumeSandbox, waits until RUNNING"),
		lat("pause", &l.pause, "p50 ≤ 5 ms", func(p50, _ float64) bool { return p50 <= 5 },
			"PauseSandbox of a running sandbox: record saved, cgroup freezer FROZEN"),
		lat("resume from pause", &l.unpause, "p50 ≤ 5 ms", func(p50, _ float64) bool { return p50 <= 5 },
			"ResumeSandbox of a paused sandbox: record saved, freezer THAWED (no new processes: it runs on where it stopped)"),
		lat("exec round trip `true`", &l.exec1, "p50 ≤ 2 ms", func(p50, _ float64) bool { return p50 <= 2 },
			"Exec stream opened → ExitStatus received, one call at a time"),
		rateRow,
		floorSeq,
		floorRow,
		lat(fmt.Sprintf("exec round trip `true`, %d concurrent callers", l.p.Callers), &l.execLoaded, "", nil,
			"latency of each call during the throughput phase"),
		xfer("file write 1 MiB", &l.w1, 1),
		xfer("file read 1 MiB", &l.r1, 1),
		xfer("file write 100 MiB", &l.w100, 100),
		xfer("file read 100 MiB", &l.r100, 100),
		lat("small GET through a preview URL", &l.previewGet, "", nil,
			"12-byte answer of a python http.server handler (HTTP/1.1, one write) in the sandbox, via the preview listener and the agent's Dial tunnel; keep-alive on both hops"),
		lat("delete", &l.del, "", nil, "DeleteSandbox of a running, claimed sandbox"),
	}, append(append(append(append(l.termWatchRows(lat), l.codeRows(lat)...), l.e2bRows(lat)...), l.snapshotRows()...), append(l.mcpRows(lat), l.idleRows()...)...)...)
}

// pauseCycles pauses and resumes one running sandbox, cycle after cycle,
// then checks that it still answers.
func (l *localSuite) pauseCycles(ctx context.Context, box string) error {
	var pa, un []time.Duration
	for i := 0; i < l.p.PauseCycle+2; i++ {
		t0 := time.Now()
		resp, err := l.api.PauseSandbox(ctx, &sandpodv1.PauseSandboxRequest{Name: box})
		d := time.Since(t0)
		if err != nil {
			return fmt.Errorf("pause: %w", err)
		}
		if ph := resp.GetSandbox().GetPhase(); ph != sandpodv1.Phase_PHASE_PAUSED {
			return fmt.Errorf("pause returned %s, want PAUSED", ph)
		}
		t0 = time.Now()
		res, err := l.api.ResumeSandbox(ctx, &sandpodv1.ResumeSandboxRequest{Name: box})
		d2 := time.Since(t0)
		if err != nil {
			return fmt.Errorf("resume from pause: %w", err)
		}
		if ph := res.GetSandbox().GetPhase(); ph != sandpodv1.Phase_PHASE_RUNNING {
			return fmt.Errorf("resume from pause returned %s, want RUNNING", ph)
		}
		if i >= 2 { // the first two warm up the connection and the cgroup files
			pa, un = append(pa, d), append(un, d2)
		}
	}
	if _, err := l.execTrue(ctx, box); err != nil {
		return fmt.Errorf("exec after pause cycles: %w", err)
	}
	l.pause.addRun(ms(pa))
	l.unpause.addRun(ms(un))
	return nil
}
