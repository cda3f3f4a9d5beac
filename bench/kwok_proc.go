package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// controllerProc is the real `sandpod controller` binary, run as its own
// process so that its RSS, CPU time and client metrics are its own.
type controllerProc struct {
	cmd     *exec.Cmd
	pid     int
	metrics string // host:port of its Prometheus endpoint
	health  string
	logPath string
	exited  chan struct{}
}

// startController runs `sandpod controller` against kubeconfig and waits for
// /readyz. Leader election is off: one replica, and a restart need not wait
// for a lease to expire.
func startController(ctx context.Context, bin, kubeconfig, logPath string, extra []string) (*controllerProc, error) {
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	health, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"controller",
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", metrics,
		"--health-probe-bind-address", health,
		"--agent-image", "example.com/sandpod:bench",
	}, extra...)
	c := &controllerProc{metrics: metrics, health: health, logPath: logPath, exited: make(chan struct{})}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	c.pid = c.cmd.Process.Pid
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, _, err := httpGet("http://" + health + "/readyz")
		if err == nil && code == http.StatusOK {
			return c, nil
		}
		select {
		case <-c.exited:
			return c, fmt.Errorf("sandpod controller exited during start:\n%s", tailFile(logPath, 30))
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("sandpod controller not ready within 90s:\n%s", tailFile(logPath, 30))
		}
	}
}

// stop sends SIGTERM and waits (SIGKILL after 20 s).
func (c *controllerProc) stop() {
	if c == nil || c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

func (c *controllerProc) scrape() (promSamples, error) {
	code, body, err := httpGet("http://" + c.metrics + "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("controller /metrics: %d", code)
	}
	return parseProm(body, nil), nil
}

func httpGet(url string) (int, string, error) {
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	return tail(string(b), n)
}

// promSample is one line of the Prometheus text format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

type promSamples []promSample

// parseProm reads the samples of the Prometheus text format, keeping only
// the metric names in keep (all when keep is nil).
func parseProm(body string, keep map[string]bool) promSamples {
	var out promSamples
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		var labels map[string]string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			name = line[:i]
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			if keep != nil && !keep[name] {
				continue
			}
			labels = parseLabels(line[i+1 : j])
			rest = strings.TrimSpace(line[j+1:])
		} else {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, rest = f[0], f[1]
			if keep != nil && !keep[name] {
				continue
			}
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out = append(out, promSample{name: name, labels: labels, value: v})
	}
	return out
}

func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			break
		}
		key := strings.TrimSpace(strings.TrimLeft(s[:eq], ","))
		var val strings.Builder
		i := eq + 2
		for ; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				val.WriteByte(s[i])
				continue
			}
			if s[i] == '"' {
				break
			}
			val.WriteByte(s[i])
		}
		m[key] = val.String()
		s = s[min(i+1, len(s)):]
	}
	return m
}

// sum adds the samples named name whose labels match every pair in match.
func (ps promSamples) sum(name string, match map[string]string) float64 {
	var t float64
	for _, p := range ps {
		if p.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if p.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			t += p.value
		}
	}
	return t
}

// writeVerbs are the apiserver_request_total verbs that change state.
var writeVerbs = map[string]string{"POST": "create", "PUT": "update", "PATCH": "patch", "APPLY": "apply", "DELETE": "delete", "DELETECOLLECTION": "deletecollection"}

// apiWrites counts writes by "resource[/subresource] verb" from
// kube-apiserver's apiserver_request_total; refused ones get their status
// code appended ("sandboxes patch 409": an optimistic-concurrency conflict).
func apiWrites(ps promSamples) map[string]float64 {
	out := map[string]float64{}
	for _, p := range ps {
		if p.name != "apiserver_request_total" {
			continue
		}
		verb, ok := writeVerbs[p.labels["verb"]]
		if !ok {
			continue
		}
		res := p.labels["resource"]
		if sub := p.labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		key := res + " " + verb
		if code := p.labels["code"]; code != "" && code[0] != '2' {
			key += " " + code
		}
		out[key] += p.value
	}
	return out
}

// clientRequests is every request of the controller's client (reads from
// the API server, watches and writes), from rest_client_requests_total.
func clientRequests(ps promSamples) float64 { return ps.sum("rest_client_requests_total", nil) }

// clientWrites is the controller's own write requests (any status code) from
// client-go's rest_client_requests_total.
func clientWrites(ps promSamples) float64 {
	var t float64
	for _, p := range ps {
		if p.name == "rest_client_requests_total" {
			switch p.labels["method"] {
			case "POST", "PUT", "PATCH", "DELETE":
				t += p.value
			}
		}
	}
	return t
}

// backgroundResources are written by the kwok bed whatever the claims do
// (node heartbeats, leases, the API server's own bookkeeping).
func backgroundResource(key string) bool {
	res, _, _ := strings.Cut(key, " ")
	res, _, _ = strings.Cut(res, "/")
	switch res {
	case "leases", "nodes", "flowschemas", "prioritylevelconfigurations", "endpointslices", "endpoints",
		"namespaces", "serviceaccounts", "customresourcedefinitions", "apiservices", "clusterroles", "clusterrolebindings",
		"roles", "rolebindings", "configmaps", "sandboxtemplates", "sandboxwarmpools":
		return true
	}
	return false
}

// writer names who makes a write on the kwok bed.
func writer(key string) string {
	f := strings.Fields(key)
	if len(f) > 2 {
		key = f[0] + " " + f[1]
	}
	switch key {
	case "sandboxclaims create":
		return "bench (the user)"
	case "pods/binding create":
		return "scheduler stand-in"
	case "pods/status patch", "pods/status update", "pods delete":
		return "kwok (kubelet stand-in)"
	case "sandboxes patch":
		return "the claimer: controller, or the bridge in its runs"
	}
	return "controller"
}

func diffCounts(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// memStatus reads VmRSS and VmHWM (peak RSS) of pid, in bytes.
func memStatus(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n * 1024
		case "VmHWM":
			hwm = n * 1024
		}
	}
	return rss, hwm
}

// resetPeakRSS sets pid's VmHWM back to its RSS now (writing 5 to
// /proc/<pid>/clear_refs, Linux 4.0+), so a later VmHWM is the peak of
// what came after.
func resetPeakRSS(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// rssParts reads RssAnon (the process's own memory: Go heap, stacks) and
// RssFile (pages of its binary and other files) of pid, in bytes: what a
// peak RSS is made of.
func rssParts(pid int) (anon, file int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "RssAnon":
			anon = n * 1024
		case "RssFile":
			file = n * 1024
		}
	}
	return anon, file
}

// bedProcs finds the kwok bed's processes (their command lines name its
// directory) by program name.
func bedProcs(dir string) map[string]int {
	out := map[string]int{}
	for _, pid := range procsUnder(dir) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(b), "\x00")
		out[filepath.Base(argv0)] = pid
	}
	return out
}

// cpuSnap is the CPU ticks of named processes and of the machine at one time.
type cpuSnap struct {
	at           time.Time
	procs        map[string]int64
	busy, totalT int64
}

func takeCPU(pids map[string]int) cpuSnap {
	s := cpuSnap{at: time.Now(), procs: map[string]int64{}}
	for name, pid := range pids {
		s.procs[name] = cpuTicks(pid)
	}
	s.busy, s.totalT = machineTicks()
	return s
}

// cpuUse is the CPU a phase used, per process in seconds, and how busy the
// machine was.
type cpuUse struct {
	Seconds     float64            `json:"seconds"`
	CPUSeconds  map[string]float64 `json:"cpu_seconds"`
	MachineBusy float64            `json:"machine_busy_cores"`
}

func cpuBetween(a, b cpuSnap) cpuUse {
	u := cpuUse{Seconds: b.at.Sub(a.at).Seconds(), CPUSeconds: map[string]float64{}}
	for name, t := range b.procs {
		u.CPUSeconds[name] = float64(t-a.procs[name]) / clockTicks
	}
	if dt := b.totalT - a.totalT; dt > 0 {
		u.MachineBusy = float64(b.busy-a.busy) / float64(dt) * float64(ncpu())
	}
	return u
}

func (u cpuUse) String() string {
	var parts []string
	for _, k := range sortedKeys(u.CPUSeconds) {
		parts = append(parts, fmt.Sprintf("%s %.1f s", k, u.CPUSeconds[k]))
	}
	return fmt.Sprintf("%.1f s wall; CPU: %s; machine busy %.2f of %d cores", u.Seconds, strings.Join(parts, ", "), u.MachineBusy, ncpu())
}
