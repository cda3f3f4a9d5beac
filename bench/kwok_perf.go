package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfCapture is a `perf record -g` of one process. The controller binary
// has no pprof endpoint and the kwok bed's kube-apiserver runs with
// --profiling=false, so perf samples them from outside; Go keeps frame
// pointers, and the function names come from the binary's pclntab through
// `go tool addr2line`, which works on stripped binaries too.
type perfCapture struct {
	What    string `json:"what"`
	File    string `json:"file"`
	Samples int    `json:"samples"`
	Top     string `json:"top,omitempty"`
	Err     string `json:"error,omitempty"`
	bin     string
	cmd     *exec.Cmd
	out     bytes.Buffer
}

func startPerf(pid int, file, what string) *perfCapture {
	p := &perfCapture{What: what, File: file}
	p.bin, _ = os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	p.cmd = exec.Command("perf", "record", "-F", "499", "-g", "-p", strconv.Itoa(pid), "-o", file)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		p.Err = err.Error()
		p.cmd = nil
	}
	time.Sleep(200 * time.Millisecond) // let perf attach
	return p
}

// stop ends the recording and summarises it: self time and time with
// callees, by function.
func (p *perfCapture) stop() *perfCapture {
	if p.cmd == nil {
		return p
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	if _, err := os.Stat(p.File); err != nil {
		p.Err = strings.TrimSpace(p.out.String())
		return p
	}
	top, n, err := perfTop(p.File, p.bin, 22, 30)
	if err != nil {
		p.Err = err.Error()
	}
	p.Top, p.Samples = top, n
	return p
}

// frame is one callchain entry of `perf script -F ip,dso`: an address
// (a file offset inside dso for user code) and the object it is in.
type frame struct {
	addr uint64
	dso  string
}

// perfTop reads the callchains of a perf.data file and ranks functions by
// self samples (the leaf frame) and by inclusive samples (anywhere on the
// stack, once per sample).
func perfTop(file, bin string, nSelf, nCum int) (string, int, error) {
	out, err := exec.Command("perf", "script", "-i", file, "-F", "ip,dso").Output()
	if err != nil {
		return "", 0, fmt.Errorf("perf script: %w", err)
	}
	var samples [][]frame
	var cur []frame
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			if len(cur) > 0 {
				samples = append(samples, cur)
				cur = nil
			}
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		dso := ""
		if len(f) > 1 {
			dso = strings.Trim(f[1], "()")
		}
		cur = append(cur, frame{a, dso})
	}
	if len(cur) > 0 {
		samples = append(samples, cur)
	}
	if len(samples) == 0 {
		return "", 0, fmt.Errorf("no samples")
	}
	names, err := addr2line(bin, samples)
	if err != nil {
		return "", len(samples), err
	}
	self, cum := map[string]int{}, map[string]int{}
	for _, s := range samples {
		self[names[s[0]]]++
		seen := map[string]bool{}
		for _, fr := range s {
			if n := names[fr]; !seen[n] {
				seen[n] = true
				cum[n]++
			}
		}
	}
	rank := func(m map[string]int, n int) string {
		keys := sortedKeys(m)
		sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
		var b strings.Builder
		for i, k := range keys {
			if i == n {
				break
			}
			fmt.Fprintf(&b, "%6.2f%%  %s\n", 100*float64(m[k])/float64(len(samples)), k)
		}
		return b.String()
	}
	return fmt.Sprintf("%d samples\nself:\n%s\nwith callees:\n%s", len(samples), rank(self, nSelf), rank(cum, nCum)), len(samples), nil
}

// addr2line names every frame: Go functions of bin (its file offsets
// turned into addresses through its program headers, then named from its
// pclntab), "[kernel]" for the kernel, the object's name for the rest.
func addr2line(bin string, samples [][]frame) (map[frame]string, error) {
	ef, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	vaddr := func(off uint64) (uint64, bool) {
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && off >= p.Off && off < p.Off+p.Filesz {
				return off - p.Off + p.Vaddr, true
			}
		}
		return 0, false
	}
	names := map[frame]string{}
	var todo []frame
	var addrs []uint64
	for _, s := range samples {
		for _, fr := range s {
			if _, done := names[fr]; done {
				continue
			}
			switch {
			case strings.Contains(fr.dso, "kernel") || fr.addr >= 0xffff000000000000:
				names[fr] = "[kernel]"
			case fr.dso != bin:
				names[fr] = "[" + filepath.Base(fr.dso) + "]"
			default:
				a, ok := vaddr(fr.addr)
				if !ok {
					names[fr] = "[unknown]"
					continue
				}
				names[fr] = "" // placeholder, filled below
				todo = append(todo, fr)
				addrs = append(addrs, a)
			}
		}
	}
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "0x%x\n", a)
	}
	cmd := exec.Command("go", "tool", "addr2line", bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool addr2line %s: %w", bin, err)
	}
	lines := strings.Split(string(out), "\n")
	for i, fr := range todo {
		name := "[unknown]"
		if 2*i < len(lines) {
			if n := strings.TrimSpace(lines[2*i]); n != "" && n != "?" {
				name = n
			}
		}
		names[fr] = name
	}
	return names, nil
}
