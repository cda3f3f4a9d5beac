// Package cgroups is the local engine's use of the host's cgroups: which
// layout the host has (v1, v2 or none), what to write for a container's
// limits, freezer and removal (pure functions of the layout), and the
// writes themselves. The engine owns when; this package owns where and what.
package cgroups

import (
	"path/filepath"
	"strconv"
	"strings"
)

// What the engine writes into cgroup files, decided here without touching
// any (cgroupsetup_linux.go does the writing). A sandbox's limits are
// written by the engine itself, into the container's cgroups that it makes
// before runc runs the container (runc is given their path and no limits:
// it only moves the init into them); the same plan serves both layouts:
//
//   - cgroup v1: one hierarchy per controller, root/<controller>/sandpod/<id>
//     (memory, pids, cpu; the freezer pauses);
//   - cgroup v2: one unified hierarchy, root/sandpod/<id>, the controllers
//     delegated down to it through cgroup.subtree_control.

// Layout is where and how the engine's cgroups live on this host.
type Layout struct {
	// root is where the cgroup file systems are mounted: /sys/fs/cgroup
	// (runc looks there too); a test's own directory in unit tests.
	root string
	// mode: cgroupNone (--no-limits: containers get no cgroups of the
	// engine's), cgroupV1 or cgroupV2.
	mode cgroupMode
	// memsw: the v1 memory hierarchy accounts swap (memory.memsw.*, a
	// kernel built or booted with swap accounting).
	memsw bool
}

type cgroupMode int

const (
	cgroupNone cgroupMode = iota
	cgroupV1
	cgroupV2
)

// limitedControllers are the controllers a sandbox's limits need; the
// engine refuses to start (without --no-limits) unless it can write all.
var limitedControllers = []string{"memory", "pids", "cpu"}

// cgroupParent is the engine's cgroup, below which each container has one.
const cgroupParent = "sandpod"

// Limits are the limits of one sandbox (0: none of that kind).
type Limits struct {
	MemoryBytes int64
	CPUMillis   int64
	PidsLimit   int64
}

// cgroupWrite is one write of value to a cgroup file.
type cgroupWrite struct {
	Path, Value string
}

// cpuPeriodMicros is the CFS period of a CPU limit: the quota is the
// limit's share of it.
const cpuPeriodMicros = 100000

// usable reports whether sandboxes get cgroups of the engine's, with
// limits and a freezer.
func (l Layout) Usable() bool { return l.mode != cgroupNone }

func (l Layout) String() string {
	switch l.mode {
	case cgroupV1:
		return "cgroup v1: memory,pids,cpu,freezer"
	case cgroupV2:
		return "cgroup v2: memory,pids,cpu,freeze"
	}
	return "none (--no-limits: sandboxes run without memory, pids or cpu limits and cannot be paused)"
}

// cgroupsPath is the container's cgroup as runc's config.json names it
// (relative to each hierarchy's root); "" when it has none of the engine's.
func (l Layout) CgroupsPath(id string) string {
	if !l.Usable() {
		return ""
	}
	return "/" + cgroupParent + "/" + id
}

// dir is the container's cgroup directory in hierarchy ctl (v1) or in the
// unified hierarchy (v2, ctl ignored).
func (l Layout) dir(ctl, id string) string {
	if l.mode == cgroupV2 {
		return filepath.Join(l.root, cgroupParent, id)
	}
	return filepath.Join(l.root, ctl, cgroupParent, id)
}

// containerDirs are the cgroups the engine makes for a container before
// runc runs it: those it writes limits into and the freezer. runc makes
// the container's cgroups in the other v1 hierarchies itself.
func (l Layout) containerDirs(id string) []string {
	switch l.mode {
	case cgroupV1:
		return []string{l.dir("memory", id), l.dir("pids", id), l.dir("cpu", id), l.dir("freezer", id)}
	case cgroupV2:
		return []string{l.dir("", id)}
	}
	return nil
}

// delegationWrites hand the limited controllers down to the containers'
// cgroups (v2 only: a controller reaches a cgroup only when every parent
// enables it in cgroup.subtree_control).
func (l Layout) delegationWrites() []cgroupWrite {
	if l.mode != cgroupV2 {
		return nil
	}
	var ws []cgroupWrite
	for _, dir := range []string{l.root, filepath.Join(l.root, cgroupParent)} {
		for _, c := range limitedControllers {
			ws = append(ws, cgroupWrite{filepath.Join(dir, "cgroup.subtree_control"), "+" + c})
		}
	}
	return ws
}

// limitWrites are the writes that give a new container's cgroups lim.
// Memory covers swap too: a sandbox cannot get past its memory limit by
// swapping (as in Kubernetes, where pods do not swap by default). On v1
// the memory limit goes first: memory.memsw.limit_in_bytes may never be
// below it.
func (l Layout) limitWrites(id string, lim Limits) []cgroupWrite {
	var ws []cgroupWrite
	add := func(ctl, file, value string) {
		ws = append(ws, cgroupWrite{filepath.Join(l.dir(ctl, id), file), value})
	}
	switch l.mode {
	case cgroupV1:
		if lim.MemoryBytes > 0 {
			m := strconv.FormatInt(lim.MemoryBytes, 10)
			add("memory", "memory.limit_in_bytes", m)
			if l.memsw {
				add("memory", "memory.memsw.limit_in_bytes", m)
			}
		}
		if lim.PidsLimit > 0 {
			add("pids", "pids.max", strconv.FormatInt(lim.PidsLimit, 10))
		}
		if lim.CPUMillis > 0 {
			add("cpu", "cpu.cfs_period_us", strconv.Itoa(cpuPeriodMicros))
			add("cpu", "cpu.cfs_quota_us", strconv.FormatInt(cpuQuota(lim.CPUMillis), 10))
		}
	case cgroupV2:
		if lim.MemoryBytes > 0 {
			add("", "memory.max", strconv.FormatInt(lim.MemoryBytes, 10))
			add("", "memory.swap.max", "0")
		}
		if lim.PidsLimit > 0 {
			add("", "pids.max", strconv.FormatInt(lim.PidsLimit, 10))
		}
		if lim.CPUMillis > 0 {
			add("", "cpu.max", strconv.FormatInt(cpuQuota(lim.CPUMillis), 10)+" "+strconv.Itoa(cpuPeriodMicros))
		}
	}
	return ws
}

// cpuQuota is the CFS quota (µs per period) of a limit in millicores.
func cpuQuota(millis int64) int64 { return millis * cpuPeriodMicros / 1000 }

// FreezerFiles are the file written and the file read with the values
// meaning frozen and thawed.
type FreezerFiles struct {
	Write, Read          string
	FrozenIn, ThawedIn   string // values written
	FrozenOut, ThawedOut string // what Read says once settled
}

// Container is what the engine reads and writes of a running
// container's cgroups: its freezer and the list of its processes (the
// zero value: none).
type Container struct {
	freezer FreezerFiles
	Procs   string
}

func (l Layout) Container(id string) Container {
	f, ok := l.freezer(id)
	if !ok {
		return Container{}
	}
	return Container{freezer: f, Procs: filepath.Join(filepath.Dir(f.Write), "cgroup.procs")}
}

func (c Container) Freezer() (FreezerFiles, bool) {
	return c.freezer, c.freezer.Write != ""
}

// freezer is the container's freezer: the file written and the file read
// with the values meaning frozen and thawed.
func (l Layout) freezer(id string) (FreezerFiles, bool) {
	switch l.mode {
	case cgroupV1:
		f := filepath.Join(l.dir("freezer", id), "freezer.state")
		return FreezerFiles{Write: f, Read: f, FrozenIn: "FROZEN", ThawedIn: "THAWED", FrozenOut: "FROZEN", ThawedOut: "THAWED"}, true
	case cgroupV2:
		d := l.dir("", id)
		return FreezerFiles{Write: filepath.Join(d, "cgroup.freeze"), Read: filepath.Join(d, "cgroup.events"),
			FrozenIn: "1", ThawedIn: "0", FrozenOut: "frozen 1", ThawedOut: "frozen 0"}, true
	}
	return FreezerFiles{}, false
}

// deleteWrites come before the container's cgroups are removed: on v2
// cgroup.kill ends whatever is left in it (frozen or not); on v1 the
// freezer thaws, as killed tasks cannot exit frozen.
func (l Layout) deleteWrites(id string) []cgroupWrite {
	switch l.mode {
	case cgroupV1:
		f, _ := l.freezer(id)
		return []cgroupWrite{{f.Write, f.ThawedIn}}
	case cgroupV2:
		return []cgroupWrite{{filepath.Join(l.dir("", id), "cgroup.kill"), "1"}}
	}
	return nil
}

// accountingProcs lists the cgroup.procs files of a container's memory,
// pids, cpu and cpuacct cgroups (cgroup v1): a helper that works for the
// sandbox from outside it (pasta) joins them, so the sandbox's limits cover
// what its traffic costs. Not the freezer (a pause or an in-place restore
// would stop or kill the network) nor devices (pasta opens /dev/net/tun).
// None on cgroup v2: its one hierarchy would bring the freezer along.
func (l Layout) AccountingProcs(id string) []string {
	if l.mode != cgroupV1 {
		return nil
	}
	var files []string
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct"} {
		files = append(files, filepath.Join(l.dir(c, id), "cgroup.procs"))
	}
	return files
}

// socketMemoryFile is where the container's socket buffers are capped
// (cgroup v1 only: v2 always charges them to the memory cgroup).
func (l Layout) socketMemoryFile(id string) string {
	if l.mode != cgroupV1 {
		return ""
	}
	return filepath.Join(l.dir("memory", id), "memory.kmem.tcp.limit_in_bytes")
}

// cgroupProblem is one thing that keeps the engine from applying limits.
type cgroupProblem struct {
	What string // a hierarchy or file
	Err  string
}

// limitsRefusal is what serve says when it cannot apply limits: what is
// missing and the ways out.
func limitsRefusal(root string, mode cgroupMode, problems []cgroupProblem) string {
	var b strings.Builder
	layout := "cgroup v1 (one hierarchy per controller under " + root + ")"
	if mode == cgroupV2 {
		layout = "cgroup v2 (unified hierarchy at " + root + ")"
	}
	b.WriteString("cannot apply sandbox limits (memory, pids, cpu; the freezer for pause) with " + layout + ":\n")
	for _, p := range problems {
		b.WriteString("  - " + p.What + ": " + p.Err + "\n")
	}
	b.WriteString("To fix, one of:\n" +
		"  - run serve on the host (as root, which it needs anyway) where the cgroup file systems under " + root + "\n" +
		"    are mounted read-write (cgroup v2: with the memory, pids and cpu controllers in " + filepath.Join(root, "cgroup.controllers") + ");\n" +
		"  - in a container: give it a cgroup tree of its own it may write (docker/podman: --privileged --cgroupns=private);\n" +
		"  - or accept sandboxes without memory, pids and cpu limits and without pause: sandpod serve --no-limits")
	return b.String()
}
