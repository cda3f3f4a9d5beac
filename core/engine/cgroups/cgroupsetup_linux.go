package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HostRoot is where this host mounts its cgroup file systems, and
// where runc looks for them.
const HostRoot = "/sys/fs/cgroup"

// LimitsError is serve's refusal to start without the limits it promises.
type LimitsError struct{ msg string }

func (e *LimitsError) Error() string { return e.msg }

// requiredV1 are the v1 hierarchies the engine writes itself.
var requiredV1 = []string{"memory", "pids", "cpu", "freezer"}

// Detect finds the layout at root and checks that the engine can
// apply limits there: every hierarchy runc will put a container in must
// take a new cgroup below sandpod/ (a probe is made and removed: a
// sandpod/ that exists says nothing about a file system mounted read-only
// since), and on v2 the controllers must reach it.
func Detect(root string) (Layout, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(root, &fs); err != nil {
		return Layout{}, &LimitsError{limitsRefusal(root, cgroupV1, []cgroupProblem{{root, err.Error()}})}
	}
	if fs.Type == unix.CGROUP2_SUPER_MAGIC {
		l := Layout{root: root, mode: cgroupV2}
		if p := probeV2(l); len(p) > 0 {
			return Layout{}, &LimitsError{limitsRefusal(root, cgroupV2, p)}
		}
		return l, nil
	}
	l := Layout{root: root, mode: cgroupV1}
	if p := probeV1(root, cgroupMounts(root)); len(p) > 0 {
		return Layout{}, &LimitsError{limitsRefusal(root, cgroupV1, p)}
	}
	_, err := os.Stat(filepath.Join(root, "memory", "memory.memsw.limit_in_bytes"))
	l.memsw = err == nil
	return l, nil
}

// cgroupMounts lists the cgroup file systems (v1 hierarchies, and the v2
// one of a hybrid layout) mounted right below root, as runc finds them.
func cgroupMounts(root string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return cgroupMountsIn(string(b), root)
}

// cgroupMountsIn is cgroupMounts on the text of a mountinfo file.
func cgroupMountsIn(mountinfo, root string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(line, " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 1 || (tail[0] != "cgroup" && tail[0] != "cgroup2") {
			continue
		}
		if mp := unescapeMountPath(fields[4]); filepath.Dir(mp) == root {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// probeV1 checks every hierarchy in mounts and that the required ones are
// among them.
func probeV1(root string, mounts []string) []cgroupProblem {
	var problems []cgroupProblem
	for _, c := range requiredV1 {
		dir := filepath.Join(root, c)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real // cpu -> cpu,cpuacct on some distributions
		}
		if !containsString(mounts, dir) {
			problems = append(problems, cgroupProblem{filepath.Join(root, c), "no cgroup v1 " + c + " hierarchy mounted there"})
		}
	}
	for _, m := range mounts {
		if err := probeCgroup(filepath.Join(m, cgroupParent)); err != nil {
			problems = append(problems, cgroupProblem{m, err.Error()})
		}
	}
	return problems
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// probeV2 checks the unified hierarchy: controllers available, delegated
// to sandpod/, and a container's cgroup there with the files the engine
// writes.
func probeV2(l Layout) []cgroupProblem {
	b, err := os.ReadFile(filepath.Join(l.root, "cgroup.controllers"))
	if err != nil {
		return []cgroupProblem{{l.root, err.Error()}}
	}
	var problems []cgroupProblem
	have := strings.Fields(string(b))
	for _, c := range limitedControllers {
		if !containsString(have, c) {
			problems = append(problems, cgroupProblem{filepath.Join(l.root, "cgroup.controllers"),
				"no " + c + " controller (on a hybrid layout it is bound to a v1 hierarchy)"})
		}
	}
	if len(problems) > 0 {
		return problems
	}
	if err := os.Mkdir(filepath.Join(l.root, cgroupParent), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return []cgroupProblem{{l.root, err.Error()}}
	}
	if err := applyCgroupWrites(l.delegationWrites()); err != nil {
		return []cgroupProblem{{"delegation", err.Error()}}
	}
	probe := filepath.Join(l.root, cgroupParent, "probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return []cgroupProblem{{filepath.Dir(probe), err.Error()}}
	}
	defer func() { _ = unix.Rmdir(probe) }()
	for _, f := range []string{"memory.max", "memory.swap.max", "pids.max", "cpu.max", "cgroup.freeze", "cgroup.kill"} {
		if _, err := os.Stat(filepath.Join(probe, f)); err != nil {
			problems = append(problems, cgroupProblem{filepath.Join(probe, f), err.Error()})
		}
	}
	return problems
}

// probeCgroup makes parent (if need be) and a cgroup below it, then
// removes that one: what runc does for a container.
func probeCgroup(parent string) error {
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	probe := filepath.Join(parent, "probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return unix.Rmdir(probe)
}

// applyCgroupWrites writes each value to its file, in order. The files
// must exist (cgroupfs makes them; a missing one is a controller that is
// not there, not a file to create).
func applyCgroupWrites(ws []cgroupWrite) error {
	for _, w := range ws {
		f, err := os.OpenFile(w.Path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(w.Value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %q to %s: %w", w.Value, w.Path, err)
		}
	}
	return nil
}

// prepareContainerCgroups makes a container's cgroups and writes its
// limits, before runc runs it in them. On failure nothing of it is left.
func (l Layout) PrepareContainer(id string, lim Limits) error {
	if !l.Usable() {
		return nil
	}
	for _, d := range l.containerDirs(id) {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			l.removeNow(id)
			return fmt.Errorf("cgroup: %w", err)
		}
	}
	if err := applyCgroupWrites(l.limitWrites(id, lim)); err != nil {
		l.removeNow(id)
		return fmt.Errorf("cgroup limits: %w", err)
	}
	return nil
}

// Host is the layout of the cgroups that containers of any engine
// on this host may have left (whether this one applies limits or not):
// what removals and sweeps look through.
func Host(root string) Layout {
	var fs unix.Statfs_t
	if unix.Statfs(root, &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC {
		return Layout{root: root, mode: cgroupV2}
	}
	return Layout{root: root, mode: cgroupV1}
}

// removeNow removes the container's cgroups that can go at once.
func (l Layout) removeNow(id string) {
	_ = rmdirAll(l, id, l.containerDirs(id))
}
