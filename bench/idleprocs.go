package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// proc is one process on the host, as /proc shows it.
type proc struct {
	pid, ppid int
	start     uint64 // starttime, clock ticks since boot: with pid, names the process
	comm      string
}

// procStat parses /proc/<pid>/stat: parent, start time and name.
func procStat(b []byte) (ppid int, start uint64, comm string, ok bool) {
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return 0, 0, "", false
	}
	f := strings.Fields(string(b[j+1:]))
	// f[0] is field 3 (state): ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return 0, 0, "", false
	}
	p, err1 := strconv.Atoi(f[1])
	s, err2 := strconv.ParseUint(f[19], 10, 64)
	return p, s, string(b[i+1 : j]), err1 == nil && err2 == nil
}

// listProcs reads every process of the host.
func listProcs() map[int]proc {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]proc, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if ppid, start, comm, ok := procStat(b); ok {
			out[pid] = proc{pid: pid, ppid: ppid, start: start, comm: comm}
		}
	}
	return out
}

// descendants are the processes below root (not root itself), sorted.
func descendants(procs map[int]proc, root int) []proc {
	var out []proc
	for _, p := range procs {
		for q, hops := p, 0; q.ppid > 0 && hops < 64; hops++ {
			if q.ppid == root {
				out = append(out, p)
				break
			}
			var ok bool
			if q, ok = procs[q.ppid]; !ok {
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// alive says whether p still runs (same pid, same start time; a zombie
// counts as gone: it holds no memory and runs nothing).
func alive(p proc) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return false
	}
	_, start, _, ok := procStat(b)
	if !ok || start != p.start {
		return false
	}
	j := bytes.LastIndexByte(b, ')')
	return !(j+2 < len(b) && (b[j+2] == 'Z' || b[j+2] == 'X'))
}

// rollupKiB reads one field (e.g. "Pss") of /proc/<pid>/smaps_rollup, in KiB.
func rollupKiB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	return kibField(b, field+":")
}

// memAvailableKiB is MemAvailable of /proc/meminfo.
func memAvailableKiB() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	return kibField(b, "MemAvailable:")
}

// kibField finds "Key:   123 kB" in b and returns 123.
func kibField(b []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// switches is the sum over p's threads of its context switches (voluntary
// and not): each is a time the thread stopped running, so over an idle
// window, about one per wakeup.
func switches(pid int) int64 {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		n += kibField(b, "voluntary_ctxt_switches:") + kibField(b, "nonvoluntary_ctxt_switches:")
	}
	return n
}
