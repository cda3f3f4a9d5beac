package engine

import (
	"path/filepath"
	"runtime"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandpod/sandpod/core/engine/cgroups"
)

// WorkspaceDir is where a local sandbox sees its work directory: the working
// directory and $HOME of its commands and the root of relative paths in the
// files API (the same path a Kubernetes sandbox uses).
const WorkspaceDir = "/workspace"

// agentPath is where the agent binary (Config.AgentBinary) is mounted (read-only) inside
// every sandbox, to run as its init and agent.
const agentPath = "/.sandpod/sandpod"

// idRangeSize is how many user and group ids each sandbox's user namespace
// maps: 0..65535 inside, a range of its own on the host.
const idRangeSize = 65536

// DefaultSandboxUID is the user (and group) that commands run as inside a
// local sandbox unless the template's securityContext names another.
const DefaultSandboxUID = 1000

// containerSpec is everything that goes into one sandbox's OCI runtime
// configuration; ociSpec turns it into the config.json that runc runs.
type containerSpec struct {
	Hostname string
	// RootFS is the sandbox's own root directory on the host (writable by
	// its root, kept across suspend), WorkDir its work directory.
	RootFS, WorkDir string
	// Executable is the agent binary on the host (Config.AgentBinary).
	Executable string
	// IDBase is the first host id of the sandbox's user namespace.
	IDBase uint32
	// UserNS, when set, is the sandbox's user namespace for runc to join
	// (made and mapped by the engine, owned by IDBase: userns_linux.go).
	UserNS string
	// RunAs is the uid:gid commands run as, inside.
	RunAsUID, RunAsGID uint32
	// HostTrees are host paths mounted read-only (the defaults, at the same
	// path, plus the template's hostPath volumes where it mounts them).
	HostTrees []hostMount
	// Env is the init's (and so the commands') environment.
	Env []string
	// AgentArgs follow the binary: `agent` and its flags.
	AgentArgs []string
	// CgroupsPath is the container's cgroup, made and limited by the
	// engine before runc runs it (cgroups.Layout); empty with --no-limits.
	CgroupsPath string
}

// hostMount is a host path mounted read-only into a sandbox.
type hostMount struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// agentCapabilities are what the agent (root inside) needs: run commands as
// another user, signal them, and manage files on the caller's behalf.
// Everything else is outside the bounding set, so no process of the sandbox
// can ever hold it.
var agentCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
}

// MaxSandboxPTYs bounds the pseudo-terminals one sandbox can hold open
// (terminal execs and its own programs together).
const MaxSandboxPTYs = 256

// ociSpec is the runc configuration of a sandbox: new user (mapped to a
// host id range of its own), PID, mount, network, UTS, IPC and cgroup
// namespaces; its own root with pivot_root; read-only host trees;
// no_new_privs, a reduced capability set and a seccomp filter.
func ociSpec(c containerSpec) *specs.Spec {
	ro := []string{"rbind", "ro", "nosuid", "nodev"}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		// max: the kernel's pseudo-terminals are few and shared by every
		// devpts instance of the host (kernel.pty.max, 4096 by default,
		// of which only max - reserve outside the host's own): one sandbox
		// must not be able to take them all.
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", "max=" + strconv.Itoa(MaxSandboxPTYs)}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=512m"}},
		{Destination: WorkspaceDir, Type: "bind", Source: c.WorkDir, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		{Destination: agentPath, Type: "bind", Source: c.Executable, Options: []string{"bind", "ro", "nosuid", "nodev"}},
	}
	for _, m := range c.HostTrees {
		mounts = append(mounts, specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: ro})
	}
	caps := append([]string(nil), agentCapabilities...)
	userns := specs.LinuxNamespace{Type: specs.UserNamespace, Path: c.UserNS}
	idMap := []specs.LinuxIDMapping{{ContainerID: 0, HostID: c.IDBase, Size: idRangeSize}}
	uidMap, gidMap := idMap, idMap
	if c.UserNS != "" {
		uidMap, gidMap = nil, nil // runc reads them from the namespace it joins
	}
	return &specs.Spec{
		Version:  specs.Version,
		Hostname: c.Hostname,
		Root:     &specs.Root{Path: c.RootFS},
		Process: &specs.Process{
			User:            specs.User{UID: 0, GID: 0},
			Args:            append([]string{agentPath}, c.AgentArgs...),
			Env:             c.Env,
			Cwd:             WorkspaceDir,
			NoNewPrivileges: true,
			Capabilities: &specs.LinuxCapabilities{
				Bounding: caps, Effective: caps, Permitted: caps,
			},
		},
		Mounts: mounts,
		Linux: &specs.Linux{
			UIDMappings: uidMap,
			GIDMappings: gidMap,
			Namespaces: []specs.LinuxNamespace{
				userns, {Type: specs.PIDNamespace}, {Type: specs.MountNamespace},
				{Type: specs.NetworkNamespace}, {Type: specs.UTSNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.CgroupNamespace},
			},
			CgroupsPath: c.CgroupsPath,
			Seccomp:     seccompProfile(),
			// As container runtimes do: kernel interfaces that reveal or
			// change the host are hidden or read-only inside.
			MaskedPaths: []string{
				"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
				"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
				"/proc/scsi", "/proc/sysrq-trigger",
			},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys"},
		},
	}
}

// limitsOf are the cgroup limits of a sandbox's run spec.
func limitsOf(rs runSpec) cgroups.Limits {
	return cgroups.Limits{MemoryBytes: rs.MemoryBytes, CPUMillis: rs.CPUMillis, PidsLimit: rs.PidsLimit}
}

// errnoPerm is the answer to a refused system call.
var errnoPerm = func() *uint { e := uint(1); return &e }()

// seccompProfile allows every system call except those that change mounts
// or namespaces, reach the kernel's keyring, BPF, modules, clocks or
// swap, make new namespaces through clone's flags, or open a socket of a
// family the network namespace does not contain (seccompnet.go). clone3 answers
// ENOSYS so that libc falls back to clone, whose flags the filter can see.
func seccompProfile() *specs.LinuxSeccomp {
	denied := []string{
		"mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
		"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "quotactl", "quotactl_fd",
		"swapon", "swapoff", "reboot", "syslog", "acct", "vhangup", "iopl", "ioperm",
		"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
	}
	enosys := uint(38)
	syscalls := []specs.LinuxSyscall{
		{Names: denied, Action: specs.ActErrno, ErrnoRet: errnoPerm},
		{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
	}
	syscalls = append(syscalls, socketRules()...)
	for _, flag := range []uint64{0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000} {
		// CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
		syscalls = append(syscalls, specs.LinuxSyscall{
			Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: errnoPerm,
			Args: []specs.LinuxSeccompArg{{Index: cloneFlagsArg, Value: flag, ValueTwo: flag, Op: specs.OpMaskedEqual}},
		})
	}
	return &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Architectures: seccompArches(), Syscalls: syscalls}
}

// cloneFlagsArg is the argument of clone(2) that holds its flags (the
// first on every architecture but s390x).
const cloneFlagsArg = 0

func seccompArches() []specs.Arch {
	switch runtime.GOARCH {
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	default:
		return []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	}
}

// newContainerID names one start of a sandbox in runc's state directory
// (and its cgroups): a name of its own per start, so that the removal of a
// start that just ended never races the next start of the same sandbox.
func newContainerID(r *record) string { return containerPrefix(r) + newUID()[:8] }

// containerPrefix begins the name of every container of a sandbox.
func containerPrefix(r *record) string { return cgroupID(r) + "-" }

// runAsArg is the agent's --run-as value.
func runAsArg(uid, gid uint32) string {
	return strconv.FormatUint(uint64(uid), 10) + ":" + strconv.FormatUint(uint64(gid), 10)
}

// sandboxDir holds everything of one sandbox on the host.
func sandboxDir(stateDir string, r *record) string {
	return filepath.Join(stateDir, "sandboxes", r.Namespace, r.Name)
}
