package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const cgroupRoot = "/sys/fs/cgroup"

// cgroups describes the limits this machine lets the engine apply.
type cgroups struct {
	v2 bool
	// controllers available (v1: mounted hierarchies we can write).
	controllers []string
}

// detectCgroups finds which of memory, pids and cpu the engine can limit.
func detectCgroups() cgroups {
	if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		cg := cgroups{v2: true}
		parent := filepath.Join(cgroupRoot, "sandpod")
		if os.MkdirAll(parent, 0o755) != nil {
			return cgroups{}
		}
		for _, c := range []string{"memory", "pids", "cpu"} {
			if strings.Contains(" "+string(b)+" ", " "+c+" ") &&
				os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+"+c), 0) == nil &&
				os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0) == nil {
				cg.controllers = append(cg.controllers, c)
			}
		}
		return cg
	}
	var cg cgroups
	for _, c := range []string{"memory", "pids", "cpu"} {
		dir := filepath.Join(cgroupRoot, c, "sandpod")
		if os.MkdirAll(dir, 0o755) == nil {
			cg.controllers = append(cg.controllers, c)
		}
	}
	return cg
}

func (c cgroups) String() string {
	if len(c.controllers) == 0 {
		return "none (no writable cgroup hierarchy)"
	}
	v := "v1"
	if c.v2 {
		v = "v2"
	}
	return "cgroup " + v + ": " + strings.Join(c.controllers, ",")
}

// cgroup is one sandbox's set of cgroup directories.
type cgroup struct {
	dirs []string
}

// create makes fresh cgroups for one start of a sandbox and writes its
// limits. Each start gets new directories (id-RANDOM): the kernel may still
// be tearing down the previous start's cgroups.
func (c cgroups) create(id string, spec runSpec) (*cgroup, error) {
	id += "-" + newUID()[:8]
	if len(c.controllers) == 0 {
		return nil, nil
	}
	cg := &cgroup{}
	write := func(dir, file, val string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0); err != nil {
			return fmt.Errorf("%s/%s = %s: %w", dir, file, val, err)
		}
		return nil
	}
	if c.v2 {
		dir := filepath.Join(cgroupRoot, "sandpod", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		cg.dirs = []string{dir}
		for _, ctl := range c.controllers {
			var err error
			switch {
			case ctl == "memory" && spec.MemoryBytes > 0:
				err = write(dir, "memory.max", strconv.FormatInt(spec.MemoryBytes, 10))
			case ctl == "pids" && spec.PidsLimit > 0:
				err = write(dir, "pids.max", strconv.FormatInt(spec.PidsLimit, 10))
			case ctl == "cpu" && spec.CPUMillis > 0:
				err = write(dir, "cpu.max", fmt.Sprintf("%d 100000", spec.CPUMillis*100))
			}
			if err != nil {
				return cg, err
			}
		}
		return cg, nil
	}
	for _, ctl := range c.controllers {
		dir := filepath.Join(cgroupRoot, ctl, "sandpod", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return cg, err
		}
		cg.dirs = append(cg.dirs, dir)
		var err error
		switch {
		case ctl == "memory" && spec.MemoryBytes > 0:
			err = write(dir, "memory.limit_in_bytes", strconv.FormatInt(spec.MemoryBytes, 10))
		case ctl == "pids" && spec.PidsLimit > 0:
			err = write(dir, "pids.max", strconv.FormatInt(spec.PidsLimit, 10))
		case ctl == "cpu" && spec.CPUMillis > 0:
			err = write(dir, "cpu.cfs_period_us", "100000")
			if err == nil {
				err = write(dir, "cpu.cfs_quota_us", strconv.FormatInt(spec.CPUMillis*100, 10))
			}
		}
		if err != nil {
			return cg, err
		}
	}
	return cg, nil
}

// remove deletes this cgroup's directories once its processes are gone.
func (cg *cgroup) remove() error {
	var errs []error
	for _, dir := range cg.dirs {
		if err := removeCgroupDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (cg *cgroup) add(pid int) error {
	for _, dir := range cg.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// removeAll deletes every cgroup of a sandbox (one per start: id-*) once its
// processes are gone; the kernel refuses while any process remains. Only for
// a sandbox that cannot be starting: one being deleted, or purged.
func (c cgroups) removeAll(id string) error {
	var errs []error
	for _, pattern := range c.dirsOf(id + "-*") {
		dirs, _ := filepath.Glob(pattern)
		for _, dir := range dirs {
			if err := removeCgroupDir(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroupDir retries for a moment: the last processes of a killed
// sandbox leave its cgroup shortly after its init has been reaped.
func removeCgroupDir(dir string) error {
	var err error
	for i := 0; i < 50; i++ {
		err = os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func (c cgroups) dirsOf(name string) []string {
	if c.v2 {
		return []string{filepath.Join(cgroupRoot, "sandpod", name)}
	}
	var dirs []string
	for _, ctl := range c.controllers {
		dirs = append(dirs, filepath.Join(cgroupRoot, ctl, "sandpod", name))
	}
	return dirs
}
