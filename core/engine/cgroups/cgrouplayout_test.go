package cgroups

import (
	"reflect"
	"strings"
	"testing"
)

const testID = "sb-0123456789abcdef-01234567"

func TestLimitWritesPerLayout(t *testing.T) {
	full := Limits{MemoryBytes: 256 << 20, CPUMillis: 500, PidsLimit: 4096}
	v1 := Layout{root: "/cg", mode: cgroupV1}
	v1sw := Layout{root: "/cg", mode: cgroupV1, memsw: true}
	v2 := Layout{root: "/cg", mode: cgroupV2}
	for name, tc := range map[string]struct {
		l    Layout
		lim  Limits
		want []cgroupWrite
	}{
		"v1, every limit": {v1, full, []cgroupWrite{
			{"/cg/memory/sandpod/" + testID + "/memory.limit_in_bytes", "268435456"},
			{"/cg/pids/sandpod/" + testID + "/pids.max", "4096"},
			{"/cg/cpu/sandpod/" + testID + "/cpu.cfs_period_us", "100000"},
			{"/cg/cpu/sandpod/" + testID + "/cpu.cfs_quota_us", "50000"},
		}},
		"v1 with swap accounting: swap capped at the memory limit, after it": {v1sw, Limits{MemoryBytes: 1 << 30}, []cgroupWrite{
			{"/cg/memory/sandpod/" + testID + "/memory.limit_in_bytes", "1073741824"},
			{"/cg/memory/sandpod/" + testID + "/memory.memsw.limit_in_bytes", "1073741824"},
		}},
		"v2, every limit: no swap at all": {v2, full, []cgroupWrite{
			{"/cg/sandpod/" + testID + "/memory.max", "268435456"},
			{"/cg/sandpod/" + testID + "/memory.swap.max", "0"},
			{"/cg/sandpod/" + testID + "/pids.max", "4096"},
			{"/cg/sandpod/" + testID + "/cpu.max", "50000 100000"},
		}},
		"v2, two cores": {v2, Limits{CPUMillis: 2000}, []cgroupWrite{
			{"/cg/sandpod/" + testID + "/cpu.max", "200000 100000"},
		}},
		"v2, a sliver of a core": {v2, Limits{CPUMillis: 15}, []cgroupWrite{
			{"/cg/sandpod/" + testID + "/cpu.max", "1500 100000"},
		}},
		"no limit asked: nothing written (a new cgroup is unlimited)": {v2, Limits{}, nil},
		"--no-limits: nothing written":                                {Layout{}, full, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.l.limitWrites(testID, tc.lim); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestCgroupPathsPerLayout(t *testing.T) {
	type paths struct {
		CgroupsPath string
		Dirs        []string
		Delegation  []cgroupWrite
		Delete      []cgroupWrite
		Freeze      FreezerFiles
		Procs       string
		Accounting  []string
		SocketFile  string
	}
	d1 := "/cg/%s/sandpod/" + testID
	v1 := func(ctl string) string { return strings.Replace(d1, "%s", ctl, 1) }
	d2 := "/cg/sandpod/" + testID
	for name, tc := range map[string]struct {
		l    Layout
		want paths
	}{
		"v1": {Layout{root: "/cg", mode: cgroupV1}, paths{
			CgroupsPath: "/sandpod/" + testID,
			Dirs:        []string{v1("memory"), v1("pids"), v1("cpu"), v1("freezer")},
			Delete:      []cgroupWrite{{v1("freezer") + "/freezer.state", "THAWED"}},
			Freeze: FreezerFiles{Write: v1("freezer") + "/freezer.state", Read: v1("freezer") + "/freezer.state",
				FrozenIn: "FROZEN", ThawedIn: "THAWED", FrozenOut: "FROZEN", ThawedOut: "THAWED"},
			Procs: v1("freezer") + "/cgroup.procs",
			Accounting: []string{v1("memory") + "/cgroup.procs", v1("pids") + "/cgroup.procs",
				v1("cpu") + "/cgroup.procs", v1("cpuacct") + "/cgroup.procs"},
			SocketFile: v1("memory") + "/memory.kmem.tcp.limit_in_bytes",
		}},
		"v2": {Layout{root: "/cg", mode: cgroupV2}, paths{
			CgroupsPath: "/sandpod/" + testID,
			Dirs:        []string{d2},
			Delegation: []cgroupWrite{
				{"/cg/cgroup.subtree_control", "+memory"}, {"/cg/cgroup.subtree_control", "+pids"}, {"/cg/cgroup.subtree_control", "+cpu"},
				{"/cg/sandpod/cgroup.subtree_control", "+memory"}, {"/cg/sandpod/cgroup.subtree_control", "+pids"}, {"/cg/sandpod/cgroup.subtree_control", "+cpu"},
			},
			Delete: []cgroupWrite{{d2 + "/cgroup.kill", "1"}},
			Freeze: FreezerFiles{Write: d2 + "/cgroup.freeze", Read: d2 + "/cgroup.events",
				FrozenIn: "1", ThawedIn: "0", FrozenOut: "frozen 1", ThawedOut: "frozen 0"},
			Procs: d2 + "/cgroup.procs",
		}},
		"--no-limits: runc decides, the engine touches no cgroup": {Layout{}, paths{}},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.l.Container(testID)
			got := paths{
				CgroupsPath: tc.l.CgroupsPath(testID), Dirs: tc.l.containerDirs(testID), Delegation: tc.l.delegationWrites(),
				Delete: tc.l.deleteWrites(testID), Freeze: c.freezer, Procs: c.Procs,
				Accounting: tc.l.AccountingProcs(testID), SocketFile: tc.l.socketMemoryFile(testID),
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if _, ok := c.Freezer(); ok != tc.l.Usable() {
				t.Errorf("freezer %v, usable %v", ok, tc.l.Usable())
			}
		})
	}
}

func TestLimitsRefusalSaysWhatAndHow(t *testing.T) {
	for name, tc := range map[string]struct {
		mode     cgroupMode
		problems []cgroupProblem
		want     []string
	}{
		"v1 read-only": {cgroupV1, []cgroupProblem{{"/sys/fs/cgroup/cpuset", "mkdir /sys/fs/cgroup/cpuset/sandpod/probe-1: read-only file system"}},
			[]string{"cgroup v1", "/sys/fs/cgroup/cpuset: mkdir", "read-only file system", "mounted read-write", "--no-limits", "--cgroupns=private"}},
		"v2 without controllers": {cgroupV2, []cgroupProblem{{"/sys/fs/cgroup/cgroup.controllers", "no memory controller"}},
			[]string{"cgroup v2 (unified hierarchy at /sys/fs/cgroup)", "no memory controller", "cgroup.controllers", "--no-limits"}},
	} {
		t.Run(name, func(t *testing.T) {
			msg := limitsRefusal("/sys/fs/cgroup", tc.mode, tc.problems)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q missing from:\n%s", w, msg)
				}
			}
		})
	}
}
