package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// kwokDetails is the kwok suite's part of the JSON beyond its rows.
type kwokDetails struct {
	Params   kwokParams `json:"params"`
	Timings  []timing   `json:"timings"`
	CPU      []phaseCPU `json:"cpu"`
	RSS      []rssPoint `json:"rss"`
	Restart  *rssPoint  `json:"rss_after_restart,omitempty"`
	StartRSS *rssPoint  `json:"rss_at_start,omitempty"`
	// ScalePeakReset: the controller's VmHWM was reset after rss[0], so
	// the later points' peaks are the scale-up's own.
	ScalePeakReset bool                            `json:"rss_peak_reset_at_scale_up,omitempty"`
	ClaimsAtScale  int                             `json:"claims_at_scale_up,omitempty"`
	Writes         map[string][]map[string]float64 `json:"api_writes_per_claim_by_run"`
	CtrlWrites     map[string][]float64            `json:"controller_writes_per_claim_by_run"`
	ObjectSizes    map[string]objSize              `json:"object_sizes,omitempty"`
	CacheSizes     []cacheSize                     `json:"cache_sizes,omitempty"`
	Profiles       []*perfCapture                  `json:"profiles,omitempty"`
	Skipped        string                          `json:"skipped,omitempty"`
}

func (k *kwokSuite) details() *kwokDetails {
	return &kwokDetails{Params: k.p, Timings: k.Timings, CPU: k.CPU, RSS: k.RSS, Restart: k.Restart, StartRSS: k.StartRSS,
		ScalePeakReset: k.ScalePeakReset, ClaimsAtScale: k.ClaimsAtScale,
		Writes: k.writes, CtrlWrites: k.ctrlWrites, ObjectSizes: k.Objects, CacheSizes: k.Caches, Profiles: k.Profiles}
}

// medianWrites is, per "resource verb", the median over runs of writes per
// claim, and the median over runs of the total (background left out).
func medianWrites(runs []map[string]float64) (map[string]float64, float64) {
	keys := map[string]bool{}
	for _, r := range runs {
		for k := range r {
			if !backgroundResource(k) {
				keys[k] = true
			}
		}
	}
	out := map[string]float64{}
	for k := range keys {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, r[k])
		}
		out[k] = median(xs)
	}
	var totals []float64
	for _, r := range runs {
		t := 0.0
		for k, v := range r {
			if !backgroundResource(k) {
				t += v
			}
		}
		totals = append(totals, t)
	}
	return out, median(totals)
}

func fmtWrites(m map[string]float64) string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys {
		if m[k] < 0.005 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f (%s)", k, m[k], writer(k)))
	}
	return strings.Join(parts, ", ")
}

func (k *kwokSuite) rows() []Row {
	sec := "kwok"
	lat := func(fig string, s *series, target string, check func(p50, p99 float64) bool, note string) Row {
		p50, p99, runs := s.latencyStats()
		r := Row{Section: sec, Figure: fig, Kind: "latency", Unit: "ms", P50: p50, P99: p99,
			Samples: s.samples(), Runs: len(runs), PerRun: runs, Target: target, Note: note}
		if check != nil {
			r.Met = boolp(check(p50, p99))
		}
		return r
	}
	var rows []Row
	note := fmt.Sprintf("one claim every %.0f ms whatever the earlier ones do, %s per run, against a pool of %d ready members (more than a run takes, so it never runs dry; it refills during the run); latency from each claim's scheduled send to Ready seen by a watch; the generator was late by p99 %.2f ms",
		1000/k.p.WarmRate, k.p.WarmFor, k.p.PoolSize, percentile(k.warmLag, 99))
	warm := lat(fmt.Sprintf("warm claim at %.0f claims/s, open loop", k.p.WarmRate), &k.warm,
		"p50 ≤ 10 ms, p99 ≤ 50 ms", func(p50, p99 float64) bool { return p50 <= 10 && p99 <= 50 }, note)
	warm.LeftOut, warm.LeftOutWhat = k.warmCold, "cold"
	if k.phase("warm") { // a row of a phase that was asked for stays, missing if it did not run
		rows = append(rows, warm)
	}
	if k.phase("burst") {
		var rates []float64
		var runs []RunStat
		for _, r := range k.burstRate.runs {
			rates = append(rates, r[0])
			runs = append(runs, RunStat{Samples: k.p.BurstClaims, Value: r[0]})
		}
		rate := median(rates)
		note := fmt.Sprintf("%d claims created at once by %d writers against %d ready members; %d claims ÷ (last Ready − first create); median over runs",
			k.p.BurstClaims, k.p.BurstWriters, k.p.PoolSize, k.p.BurstClaims)
		if k.burstCold > 0 {
			note += fmt.Sprintf("; %d claims were served cold", k.burstCold)
		}
		rows = append(rows, Row{Section: sec, Figure: fmt.Sprintf("burst of %d warm claims: claims per second", k.p.BurstClaims),
			Kind: "rate", Unit: "claims/s", P50: rate, Samples: k.burstLat.samples(), Runs: len(runs), PerRun: runs,
			Target: "≥ 250 claims/s", Met: boolp(rate >= 250), Note: note})
		rows = append(rows, lat(fmt.Sprintf("burst of %d warm claims: each claim", k.p.BurstClaims), &k.burstLat, "", nil,
			"each claim's create call → Ready seen by the watch, during the burst"))
	}
	if k.coldPod.samples() > 0 {
		rows = append(rows,
			lat("cold claim → pod created (controller's share)", &k.coldPod, "", nil,
				"claim on a template with no pool, one at a time: create call → the controller's pod seen by a watch (claim reconcile, Sandbox create, pod create)"),
			lat("cold claim → Ready (with kwok's pod start)", &k.coldReady, "", nil,
				"the same claims to Ready: adds scheduling (the harness binds), kwok's Running/Ready status and the controller's status writes"),
			lat("cold Sandbox → pod created (controller's share)", &k.sbPod, "", nil,
				"Sandbox created directly, one at a time: create call → its pod seen by a watch"),
			lat("cold Sandbox → Running (with kwok's pod start)", &k.sbRun, "", nil, "the same sandboxes to phase Running"))
	}
	for _, w := range []struct{ kind, fig string }{
		{"warm", "API writes per warm claim (with the refill it causes)"},
		{"cold", "API writes per cold claim"},
	} {
		runs := k.writes[w.kind]
		if len(runs) == 0 {
			continue
		}
		byRes, total := medianWrites(runs)
		per := make([]RunStat, 0, len(runs))
		for i := range runs {
			_, t := medianWrites(runs[i : i+1])
			per = append(per, RunStat{Samples: 1, Value: t})
		}
		n := 0
		switch w.kind {
		case "warm":
			n = k.warm.samples() + k.warmCold
		case "cold":
			n = k.coldPod.samples()
		}
		rows = append(rows, Row{Section: sec, Figure: w.fig, Kind: "count", Unit: "writes", P50: total,
			Samples: n, Runs: len(runs), PerRun: per,
			Note: "kube-apiserver apiserver_request_total (POST/PUT/PATCH/DELETE) before and after, ÷ claims; by resource: " + fmtWrites(byRes)})
		ctrl := median(k.ctrlWrites[w.kind])
		rows = append(rows, Row{Section: sec, Figure: w.fig + ", controller only",
			Kind: "count", Unit: "writes", P50: ctrl, Samples: n, Runs: len(runs),
			Note: "the controller binary's rest_client_requests_total (POST/PUT/PATCH/DELETE) ÷ claims"})
	}
	rows = append(rows, k.bridgeRows()...)
	if k.phase("scale") {
		rows = append(rows, k.rssRows()...)
	}
	return rows
}

// rssRows are the controller's memory rows. The target is judged on the
// whole run's peak (every phase, the bursts included) and on a fresh
// start's; the scale-up's own peak (VmHWM reset as it began) is shown
// beside it, without a target. With no reading the target rows stay, missing.
func (k *kwokSuite) rssRows() []Row {
	const target = "≤ 100 MB (95.4 MiB)"
	within := func(mib float64) *bool { return boolp(mib*(1<<20) <= 100e6) }
	sec := "kwok"
	var rows []Row
	whole := Row{Section: sec, Figure: "controller peak RSS, whole run", Kind: "memory", Unit: "MiB", Target: target, Met: boolp(false)}
	if len(k.RSS) > 0 {
		last := k.RSS[len(k.RSS)-1]
		suite, scale, hasScale := controllerPeaks(k.RSS, k.ScalePeakReset)
		note := "VmHWM of the `sandpod controller` process from /proc; "
		if st := k.StartRSS; st != nil {
			note += fmt.Sprintf("RSS %.1f MiB just after start with no sandboxes; ", st.RSSMiB)
		}
		note += "RSS at each step: "
		var parts []string
		for _, p := range k.RSS {
			parts = append(parts, fmt.Sprintf("%d → %.1f MiB (peak %.1f, Go heap %.1f)", p.Sandboxes, p.RSSMiB, p.HWMMiB, p.HeapMiB))
		}
		note += strings.Join(parts, "; ")
		if slope, icept, ok := fitLine(k.RSS); ok {
			note += fmt.Sprintf("; RSS ≈ %.1f MiB + %.1f MiB per 1,000 sandboxes (least squares), so ≈ %.0f MiB at 5,000", icept, slope*1000, icept+slope*5000)
		}
		whole.Figure = fmt.Sprintf("controller peak RSS, whole run up to %d sandboxes", last.Sandboxes)
		whole.P50, whole.Samples, whole.Runs, whole.Met = suite, 1, 1, within(suite)
		whole.Note = "the target's figure: the peak over every phase (the same process served every figure above, and the scale-up); " + note
		rows = append(rows, whole)
		if hasScale {
			rows = append(rows, Row{Section: sec, Figure: fmt.Sprintf("controller peak RSS during the scale-up to %d sandboxes only", last.Sandboxes),
				Kind: "memory", Unit: "MiB", P50: scale, Samples: 1, Runs: 1,
				Note: fmt.Sprintf("for reference, not judged: VmHWM reset as the cluster grew from %d to %d sandboxes (each with its pod; %d SandboxClaims of the runs above in place), so the earlier phases' peak is not in it",
					k.RSS[0].Sandboxes, last.Sandboxes, k.ClaimsAtScale)})
		}
	} else {
		rows = append(rows, whole)
	}
	fresh := Row{Section: sec, Figure: "controller peak RSS, fresh start with every sandbox", Kind: "memory", Unit: "MiB",
		Target: target, Met: boolp(false)}
	if r := k.Restart; r != nil {
		fresh.Figure = fmt.Sprintf("controller peak RSS, fresh start with %d sandboxes", r.Sandboxes)
		fresh.P50, fresh.Samples, fresh.Runs, fresh.Met = r.HWMMiB, 1, 1, within(r.HWMMiB)
		fresh.Note = fmt.Sprintf("a new controller process: initial lists and one reconcile of every object (%s); RSS after %.1f MiB, Go heap %.1f MiB", r.At, r.RSSMiB, r.HeapMiB)
	}
	return append(rows, fresh)
}

// controllerPeaks reads the controller's peaks from the RSS points: the
// whole suite's (every phase) and, when VmHWM was reset just after the
// first point (reset), the scale-up's own (the last point's peak).
func controllerPeaks(points []rssPoint, reset bool) (suite, scale float64, hasScale bool) {
	if len(points) == 0 {
		return 0, 0, false
	}
	last := points[len(points)-1].HWMMiB
	if !reset {
		return last, 0, false
	}
	return max(points[0].HWMMiB, last), last, len(points) > 1
}

// fitLine fits RSS = a + b·N by least squares over the points.
func fitLine(pts []rssPoint) (slope, icept float64, ok bool) {
	if len(pts) < 2 {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		x, y := float64(p.Sandboxes), p.RSSMiB
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(pts))
	d := n*sxx - sx*sx
	if math.Abs(d) < 1e-9 {
		return 0, 0, false
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n, true
}

// notes are the lines under the table.
func (k *kwokSuite) allNotes() []string {
	out := append([]string(nil), k.notes...)
	for _, kind := range []string{"warm", "burst", "cold", "bridge"} {
		if runs := k.writes[kind]; len(runs) > 0 {
			byRes, total := medianWrites(runs)
			out = append(out, fmt.Sprintf("kwok: API writes per %s claim, %.2f in all (median of %d runs; controller's own client: %.2f): %s",
				kind, total, len(runs), median(k.ctrlWrites[kind]), fmtWrites(byRes)))
		}
	}
	for _, c := range k.CPU {
		out = append(out, "kwok: "+c.String())
	}
	if len(k.Objects) > 0 {
		var parts []string
		for _, name := range sortedKeys(k.Objects) {
			o := k.Objects[name]
			parts = append(parts, fmt.Sprintf("%s %d B (managedFields %d B)", name, o.JSONBytes, o.ManagedFieldsBytes))
		}
		out = append(out, "kwok: object sizes as JSON: "+strings.Join(parts, ", "))
	}
	if len(k.Caches) > 0 {
		var parts []string
		sum, sumNoMF, sumCached := 0.0, 0.0, 0.0
		for _, c := range k.Caches {
			parts = append(parts, fmt.Sprintf("%d %s %.1f MiB (%.1f KiB each; %.1f MiB without managedFields; %.1f MiB as cached)",
				c.Objects, c.Kind, c.MiB, c.MiB*1024/float64(c.Objects), c.WithoutManagedFieldsMiB, c.AsCachedMiB))
			sum, sumNoMF, sumCached = sum+c.MiB, sumNoMF+c.WithoutManagedFieldsMiB, sumCached+c.AsCachedMiB
		}
		out = append(out, fmt.Sprintf("kwok: what the controller caches, decoded into Go structs in the benchmark process: %s; %.0f MiB in all, %.0f MiB without managedFields, %.0f MiB as the controller caches them (its transforms: controller.CachedForm)",
			strings.Join(parts, ", "), sum, sumNoMF, sumCached))
	}
	var ts []string
	total := 0.0
	for _, t := range k.Timings {
		ts = append(ts, fmt.Sprintf("%s %.0fs", t.Phase, t.Seconds))
		total += t.Seconds
	}
	if len(ts) > 0 {
		out = append(out, fmt.Sprintf("kwok: timings (%.0fs in all): %s", total, strings.Join(ts, "; ")))
	}
	return out
}
