package engine

import (
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestOCISpecContainsTheSandbox(t *testing.T) {
	s := ociSpec(containerSpec{
		Hostname: "sb", RootFS: "/state/sb/rootfs", WorkDir: "/state/sb/work", Executable: "/bin/sandpod",
		IDBase: firstIDBase, RunAsUID: 1000, RunAsGID: 1000,
		HostTrees:   []hostMount{{Source: "/usr", Destination: "/usr"}},
		CgroupsPath: "/sandpod/sb-0123456789abcdef-01234567",
	})
	l := s.Linux
	if len(l.UIDMappings) != 1 || l.UIDMappings[0] != (specs.LinuxIDMapping{ContainerID: 0, HostID: firstIDBase, Size: idRangeSize}) ||
		len(l.GIDMappings) != 1 || l.GIDMappings[0].HostID != firstIDBase {
		t.Fatalf("id mappings %v %v: want 0..65535 onto the sandbox's own range", l.UIDMappings, l.GIDMappings)
	}
	for _, ns := range []specs.LinuxNamespaceType{specs.UserNamespace, specs.PIDNamespace, specs.MountNamespace, specs.NetworkNamespace, specs.UTSNamespace, specs.IPCNamespace, specs.CgroupNamespace} {
		i := slices.IndexFunc(l.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == ns })
		if i < 0 || l.Namespaces[i].Path != "" {
			t.Errorf("namespace %s: want a new one, got %v", ns, l.Namespaces)
		}
	}
	if !s.Process.NoNewPrivileges || s.Process.User.UID != 0 || s.Process.Args[0] != agentPath {
		t.Errorf("process %+v: want the agent as root inside with no_new_privs", s.Process)
	}
	for _, c := range []string{"CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_NET_ADMIN", "CAP_SYS_MODULE", "CAP_MKNOD", "CAP_NET_RAW"} {
		if slices.Contains(s.Process.Capabilities.Bounding, c) {
			t.Errorf("bounding set holds %s", c)
		}
	}
	mounts := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m
	}
	if m := mounts["/usr"]; !slices.Contains(m.Options, "ro") {
		t.Errorf("host tree /usr: %v, want read-only", m)
	}
	if m := mounts[WorkspaceDir]; m.Source != "/state/sb/work" || !slices.Contains(m.Options, "rw") {
		t.Errorf("workspace: %v", m)
	}
	if m := mounts[agentPath]; m.Source != "/bin/sandpod" || !slices.Contains(m.Options, "ro") {
		t.Errorf("agent binary: %v", m)
	}
	if mounts["/proc"].Type != "proc" || mounts["/tmp"].Type != "tmpfs" {
		t.Errorf("own /proc and /tmp: %v %v", mounts["/proc"], mounts["/tmp"])
	}
	// The engine writes the limits into the cgroup it made (cgroups.Layout);
	// runc only moves the container into it, and writes none of its own.
	if l.CgroupsPath != "/sandpod/sb-0123456789abcdef-01234567" || l.Resources != nil {
		t.Errorf("cgroups path %q, resources %+v: want the engine's cgroup and no limits of runc's", l.CgroupsPath, l.Resources)
	}
	denied := map[string]bool{}
	for _, sc := range l.Seccomp.Syscalls {
		if sc.Action == specs.ActErrno && len(sc.Args) == 0 {
			for _, n := range sc.Names {
				denied[n] = true
			}
		}
	}
	for _, n := range []string{"mount", "umount2", "unshare", "setns", "keyctl", "bpf", "pivot_root", "open_tree", "move_mount", "clone3"} {
		if !denied[n] {
			t.Errorf("seccomp allows %s", n)
		}
	}
	if l.Seccomp.DefaultAction != specs.ActAllow {
		t.Errorf("default action %s", l.Seccomp.DefaultAction)
	}
	var cloneRules []string
	for _, sc := range l.Seccomp.Syscalls {
		if slices.Contains(sc.Names, "clone") {
			cloneRules = append(cloneRules, string(sc.Args[0].Op))
		}
	}
	if len(cloneRules) != 7 || strings.Join(slices.Compact(cloneRules), "") != string(specs.OpMaskedEqual) {
		t.Errorf("clone rules %v: want one masked-equal rule per namespace flag", cloneRules)
	}
}

func TestOCISpecJoinsTheEnginesUserNamespace(t *testing.T) {
	s := ociSpec(containerSpec{RootFS: "/r", WorkDir: "/w", Executable: "/e", IDBase: firstIDBase, UserNS: "/proc/42/ns/user"})
	l := s.Linux
	if l.UIDMappings != nil || l.GIDMappings != nil {
		t.Errorf("mappings %v %v: runc refuses them beside a namespace to join (it reads the namespace's own)", l.UIDMappings, l.GIDMappings)
	}
	i := slices.IndexFunc(l.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace })
	if i < 0 || l.Namespaces[i].Path != "/proc/42/ns/user" {
		t.Errorf("namespaces %v: want the user namespace joined by path", l.Namespaces)
	}
	for _, n := range l.Namespaces {
		if n.Type != specs.UserNamespace && n.Path != "" {
			t.Errorf("namespace %s joined (%s): every other namespace is the sandbox's own", n.Type, n.Path)
		}
	}
}
