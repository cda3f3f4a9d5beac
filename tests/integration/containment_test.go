package integration

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// The hostile-code suite: code inside a local sandbox tries each escape an
// attacker would, as the sandbox's default user and as root inside (a
// template that asks for root), and each test asserts what a user of the
// host would check: the host file is not there, the other sandbox's socket
// and files cannot be reached, the secret is not read, the call is refused.

// rootConfig adds a template whose commands run as root inside.
const rootConfig = `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: rooted
spec:
  podTemplate:
    spec:
      securityContext: {runAsUser: 0}
      containers:
      - name: sandbox
        image: unused
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: offline
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
  networkPolicy: {egress: None}
`

type hostileBed struct {
	srv            *testserver.Server
	user, root     string // sandboxes of the default user and of root inside
	offline        string // egress None
	other          string // another sandbox, whose files and socket are the prize
	marker         string // a file in the host's /tmp
	token          string
	stateDir, sock string
}

func newHostileBed(t *testing.T) *hostileBed {
	t.Helper()
	b := &hostileBed{token: randomHex(16)}
	b.srv = testserver.Start(t, testserver.Options{Config: defaultConfig + rootConfig, Token: b.token})
	c := b.srv.Client()
	u, _ := claim(t, c, "python")
	o, _ := claim(t, c, "python")
	b.user, b.other = u.Name, o.Name
	b.root = createSandbox(t, b.srv, "rooted")
	b.offline = createSandbox(t, b.srv, "offline")
	b.stateDir = b.srv.StateDir()
	sum := sha256.Sum256([]byte(b.stateDir))
	b.sock = filepath.Join(os.TempDir(), "sandpod-"+hex.EncodeToString(sum[:6]))
	b.marker = filepath.Join(os.TempDir(), "sandpod-hostile-"+randomHex(6))
	if err := os.WriteFile(b.marker, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(b.marker) })
	sh(t, c, b.other, "echo prize > prize.txt")
	return b
}

func createSandbox(t *testing.T, srv *testserver.Server, template string) string {
	t.Helper()
	cr, err := srv.Client().CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: template})
	if err != nil {
		t.Fatalf("create from %s: %v", template, err)
	}
	return cr.GetSandbox().GetName()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// both runs an attack as the default user and as root inside.
func (b *hostileBed) both(t *testing.T, cmd string, check func(t *testing.T, who string, r execResult)) {
	t.Helper()
	for who, name := range map[string]string{"user": b.user, "root": b.root} {
		check(t, who, sh(t, b.srv.Client(), name, cmd))
	}
}

func TestHostileCodeIsContained(t *testing.T) {
	b := newHostileBed(t)
	c := b.srv.Client()

	t.Run("commands run as an unprivileged user unless the template asks for root", func(t *testing.T) {
		if r := sh(t, c, b.user, "id -u; cat /proc/self/status | grep -E '^(CapEff|NoNewPrivs|Seccomp):'"); !strings.HasPrefix(r.stdout, "1000\n") ||
			!strings.Contains(r.stdout, "CapEff:\t0000000000000000") || !strings.Contains(r.stdout, "NoNewPrivs:\t1") || !strings.Contains(r.stdout, "Seccomp:\t2") {
			t.Fatalf("default user: %q", r.stdout)
		}
		if r := sh(t, c, b.root, "id -u"); r.stdout != "0\n" {
			t.Fatalf("root template: id -u = %q", r.stdout)
		}
	})

	t.Run("remounting the root read-write leaves no file on the host", func(t *testing.T) {
		escape := "/usr/sandpod-escape-" + randomHex(4)
		b.both(t, "mount -o remount,bind,rw / ; mount -o remount,rw /usr ; touch "+escape+" ; echo done", func(t *testing.T, who string, r execResult) {
			if !strings.Contains(r.stdout, "done") {
				t.Fatalf("%s: the attack did not run: %+v", who, r)
			}
			if _, err := os.Stat(escape); err == nil {
				os.Remove(escape)
				t.Fatalf("%s: created %s on the host", who, escape)
			}
			if !strings.Contains(r.stderr, "mount") {
				t.Fatalf("%s: mount did not complain: %q", who, r.stderr)
			}
		})
	})

	t.Run("root inside owns nothing on the host", func(t *testing.T) {
		sh(t, c, b.root, "echo x > owned-by-root-inside")
		fi, err := os.Stat(filepath.Join(b.stateDir, "sandboxes", "default", b.root, "work", "owned-by-root-inside"))
		if err != nil {
			t.Fatal(err)
		}
		uid := fi.Sys().(*syscall.Stat_t).Uid
		if uid < 1<<30 {
			t.Fatalf("a file of root inside is owned by host uid %d, want an unprivileged id >= 2^30", uid)
		}
		fu, _ := os.Stat(filepath.Join(b.stateDir, "sandboxes", "default", b.user, "work"))
		if fu.Sys().(*syscall.Stat_t).Uid/65536 == uid/65536 {
			t.Fatalf("two sandboxes share the host id range of %d", uid)
		}
	})

	t.Run("unmounting /tmp does not reach the host's /tmp, state, sockets or tokens", func(t *testing.T) {
		tokens := filepath.Join(filepath.Dir(b.stateDir), "tokens")
		probe := fmt.Sprintf("umount -l /tmp; umount /tmp; cat %s %s/state.db %s %s/sandboxes/default/%s/work/prize.txt; ls %s; find / -name '*.sock' 2>/dev/null; grep -rs %s / --include=tokens; echo done",
			b.marker, b.stateDir, tokens, b.stateDir, b.other, b.sock, b.token)
		b.both(t, probe, func(t *testing.T, who string, r execResult) {
			out := r.stdout + r.stderr
			if !strings.Contains(r.stdout, "done") {
				t.Fatalf("%s: the attack did not run: %+v", who, r)
			}
			for _, leak := range []string{"host secret", "prize", ".sock", b.token} {
				if strings.Contains(r.stdout, leak) {
					t.Fatalf("%s: reached %q:\n%s", who, leak, out)
				}
			}
		})
	})

	t.Run("the agent's secret and socket are out of reach", func(t *testing.T) {
		// /proc/1 is the sandbox's init, its child the agent: both hold the
		// secret, and the agent's fds include the listening socket. pasta
		// (egress) lives in the host's mount and network namespaces.
		probe := `for p in $(ls /proc | grep -E '^[0-9]+$'); do
  case "$(tr '\0' '\n' < /proc/$p/cmdline 2>/dev/null | head -n1)" in /.sandpod/sandpod|/proc/self/exe|*/pasta) ;; *) continue;; esac
  ls /proc/$p/root/ >/dev/null 2>&1 && echo "root of $p readable"
  head -c1 /proc/$p/environ >/dev/null 2>&1 && echo "environ of $p readable"
  for f in /proc/$p/fd/*; do readlink "$f"; done 2>/dev/null | grep -q . && echo "fds of $p readable"
  python3 -c "import sys; f=open('/proc/$p/mem','rb')" 2>/dev/null && echo "mem of $p open"
  python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, $p, 0, 0)
print('ptrace attach of $p:', 'allowed' if r == 0 else 'refused')"
done; echo done`
		b.both(t, probe, func(t *testing.T, who string, r execResult) {
			if !strings.Contains(r.stdout, "done") || !strings.Contains(r.stdout, "ptrace attach of 1: refused") || strings.Count(r.stdout, ": refused") != 3 {
				t.Fatalf("%s: the attack did not run on the init: %+v", who, r)
			}
			for _, leak := range []string{"readable", "open", "allowed"} {
				if strings.Contains(r.stdout, leak) {
					t.Fatalf("%s: %s", who, r.stdout)
				}
			}
		})
	})

	t.Run("commands inherit no socket or pipe of the agent's", func(t *testing.T) {
		// The agent's listening socket in a command would let it accept
		// the engine's calls, secret included.
		b.both(t, `for f in /proc/$$/fd/*; do readlink "$f"; done | grep -c socket; echo done`, func(t *testing.T, who string, r execResult) {
			if r.stdout != "0\ndone\n" {
				t.Fatalf("%s: a command holds sockets: %q", who, r.stdout)
			}
		})
	})

	t.Run("its own /proc: no host process, and it cannot be unmounted", func(t *testing.T) {
		b.both(t, "umount /proc; umount -l /proc; cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '; echo; ls /proc | grep -cE '^[0-9]+$'", func(t *testing.T, who string, r execResult) {
			if strings.Contains(r.stdout, " serve ") || strings.Contains(r.stdout, "go test") || strings.Contains(r.stdout, "integration.test") {
				t.Fatalf("%s sees host processes: %s", who, r.stdout)
			}
			if !strings.Contains(r.stdout, "agent --sandbox") {
				t.Fatalf("%s: /proc is not the sandbox's own (no agent in it): %s", who, r.stdout)
			}
		})
	})

	t.Run("no /etc/shadow, /root, /home or /var of the host", func(t *testing.T) {
		b.both(t, "cat /etc/shadow; ls /root /home /var; echo done", func(t *testing.T, who string, r execResult) {
			if r.stdout != "done\n" {
				t.Fatalf("%s: %q", who, r.stdout)
			}
		})
	})

	t.Run("namespaces, keyrings and BPF are refused", func(t *testing.T) {
		if runtime.GOARCH != "amd64" {
			t.Skip("system call numbers below are x86-64's")
		}
		probe := `unshare -U true && echo "unshare allowed"; unshare -m true && echo "unshare -m allowed"
python3 -c "
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for name, nr, args in [('keyctl', 250, (0, 0, 0, 0, 0)), ('bpf', 321, (0, 0, 0)), ('add_key', 248, (0, 0, 0, 0, 0)), ('setns', 308, (0, 0))]:
    r = libc.syscall(nr, *args)
    print(name, 'refused' if r == -1 and ctypes.get_errno() == 1 else 'allowed: %d errno %d' % (r, ctypes.get_errno()))
"; echo done`
		b.both(t, probe, func(t *testing.T, who string, r execResult) {
			if strings.Contains(r.stdout, "allowed") || strings.Count(r.stdout, "refused") != 4 {
				t.Fatalf("%s: %s %s", who, r.stdout, r.stderr)
			}
		})
	})

	t.Run("the server's port on 127.0.0.1 is not reachable", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(b.srv.Addr())
		probe := `python3 -c "
import socket
s = socket.socket(); s.settimeout(5)
print('connect:', s.connect_ex(('127.0.0.1', ` + port + `)))"`
		for _, name := range []string{b.user, b.root, b.offline} {
			r := sh(t, c, name, probe)
			if !strings.Contains(r.stdout, "connect: 111") { // ECONNREFUSED: its own loopback
				t.Fatalf("%s: %q %q", name, r.stdout, r.stderr)
			}
		}
	})

	// pasta lives in the sandbox's PID namespace but outside its freezer
	// cgroup (below: in its memory, pids and cpu ones): code that could trace it would run on
	// through a pause. The kernel refuses: pasta keeps CAP_SYS_ADMIN in the
	// sandbox's user namespace, outside the sandbox's bounding set, and
	// the sandbox has no CAP_SYS_PTRACE. The init (non-dumpable) likewise.
	t.Run("pasta and the init cannot be traced or read", func(t *testing.T) {
		probe := `python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pids = [p for p in os.listdir("/proc") if p.isdigit()]
pasta = [int(p) for p in pids if open("/proc/%s/comm" % p).read().strip().startswith(("pasta", "passt"))]
assert pasta, "no pasta in the sandbox's PID namespace"
for pid in pasta + [1]:
    r = libc.ptrace(16, pid, 0, 0)  # PTRACE_ATTACH
    print(pid, "attach", r, ctypes.get_errno())
    for f in ("mem", "environ", "fd/0"):
        try:
            os.close(os.open("/proc/%d/%s" % (pid, f), os.O_RDONLY))
            print(pid, f, "opened")
        except OSError as e:
            print(pid, f, e.errno)
PY`
		b.both(t, probe, func(t *testing.T, who string, r execResult) {
			if r.exit.GetExitCode() != 0 || strings.Contains(r.stdout, "attach 0") || strings.Contains(r.stdout, "opened") {
				t.Errorf("%s: %q %q", who, r.stdout, r.stderr)
			}
		})
	})

	// pasta works for the sandbox from outside it: it is charged to the
	// sandbox's memory, pids and cpu cgroups (not its freezer, so a pause
	// keeps the network), so flooding the network spends the sandbox's
	// limits, not the host's.
	t.Run("pasta is charged to the sandbox's cgroups", func(t *testing.T) {
		probe := `python3 - <<'PY'
import os
def groups(pid):
    out = {}
    for line in open("/proc/%s/cgroup" % pid):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        for c in ctrls.split(","):
            out[c] = path
    return out
pids = [p for p in os.listdir("/proc") if p.isdigit()]
pasta = [p for p in pids if open("/proc/%s/comm" % p).read().strip().startswith(("pasta", "passt"))]
assert pasta, "no pasta in the sandbox's PID namespace"
init = groups(1)
for p in pasta:
    g = groups(p)
    for c in ("memory", "pids", "cpu"):
        print(c, "same" if g.get(c) == init.get(c) else "other: %r vs %r" % (g.get(c), init.get(c)))
    print("freezer", "same" if g.get("freezer") == init.get("freezer") else "other")
    print("unified", "same" if g.get("") == init.get("") else "other")
PY`
		r := sh(t, c, b.user, probe)
		if limitsLayout(t, b.srv) == "v2" {
			// One hierarchy: pasta stays out of it (it would bring the
			// freezer along), so it is not charged (docs/security.md).
			if r.exit.GetExitCode() != 0 || !strings.Contains(r.stdout, "unified other") {
				t.Fatalf("want pasta outside the sandbox's cgroup on cgroup v2: %q %q", r.stdout, r.stderr)
			}
			return
		}
		if r.exit.GetExitCode() != 0 || !strings.Contains(r.stdout, "memory same\npids same\ncpu same\nfreezer other\n") {
			t.Fatalf("want pasta in the sandbox's memory, pids and cpu cgroups and not its freezer: %q %q", r.stdout, r.stderr)
		}
	})

	t.Run("egress None has loopback only; egress Internet its own network", func(t *testing.T) {
		probe := `python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))'`
		if r := sh(t, c, b.offline, probe); strings.TrimSpace(r.stdout) != "['lo']" {
			t.Fatalf("egress None: %q", r.stdout)
		}
		// pasta's one tap device beside loopback, not the host's interfaces.
		r := sh(t, c, b.user, probe)
		if !strings.Contains(r.stdout, "'lo'") || strings.Count(r.stdout, "'") != 4 {
			t.Fatalf("egress Internet: %q", r.stdout)
		}
	})
}
