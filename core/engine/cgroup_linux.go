package engine

import (
	"os"
	"path/filepath"
	"strings"
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

// usable reports whether runc can apply limits here: sandboxes then run
// in cgroups under sandpod/ that runc makes and removes.
func (c cgroups) usable() bool { return len(c.controllers) > 0 }
