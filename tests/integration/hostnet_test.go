package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandpod/sandpod/tests/testserver"
)

// Code in a sandbox with egress Internet against the host's own network:
// what the host's network namespace holds must not be readable from the
// sandbox (pasta, which lives in it, used to be in the sandbox's PID
// namespace: /proc/<pasta>/net showed the host's sockets), and no address
// of the host itself may be reachable through pasta.

// netBed: a server with egress sandboxes of the default user and of root
// inside, and the path prefix of its agents' sockets on the host.
type netBed struct {
	srv        *testserver.Server
	user, root string
	sockDir    string
}

func newNetBed(t *testing.T) *netBed {
	t.Helper()
	b := &netBed{srv: testserver.Start(t, testserver.Options{Config: defaultConfig + rootConfig})}
	u, _ := claim(t, b.srv.Client(), "python")
	b.user = u.Name
	b.root = createSandbox(t, b.srv, "rooted")
	sum := sha256.Sum256([]byte(b.srv.StateDir()))
	b.sockDir = "sandpod-" + hex.EncodeToString(sum[:6])
	return b
}

// scanProc is run inside a sandbox: it reads the network files of every
// /proc/<pid> it can see (and of /proc/self and /proc/net) and prints, as
// JSON, each line that names the TCP port (hex) or the text it is given,
// the interfaces seen that are not the sandbox's own, and the processes
// that are pasta.
const scanProc = `python3 - "$@" <<'PY'
import json, os, sys
port, needle = sys.argv[1], sys.argv[2]
own = {l.split(":")[0].strip() for l in open("/proc/self/net/dev").read().splitlines()[2:]}
found, ifaces, pasta = [], set(), []
dirs = [p for p in os.listdir("/proc") if p.isdigit()] + ["self", "thread-self"]
for p in dirs:
    try:
        comm = open("/proc/%s/comm" % p).read().strip()
    except OSError:
        comm = ""
    if comm.startswith(("pasta", "passt")):
        pasta.append(p)
    for f in ("tcp", "tcp6", "udp", "udp6", "raw", "raw6", "unix", "route", "dev", "packet", "netlink"):
        try:
            data = open("/proc/%s/net/%s" % (p, f)).read()
        except OSError:
            continue
        for line in data.splitlines()[1:]:
            cols = line.split()
            if f.startswith(("tcp", "udp")) and len(cols) > 2 and cols[1].upper().endswith(":" + port):
                found.append("/proc/%s/net/%s: %s" % (p, f, line.strip()))
            if needle in line:
                found.append("/proc/%s/net/%s: %s" % (p, f, line.strip()))
            if f == "dev" and ":" in line:
                name = line.split(":")[0].strip()
                if name not in own:
                    ifaces.add(name)
print(json.dumps({"found": found[:20], "ifaces": sorted(ifaces), "pasta": pasta, "seen": len(dirs)}))
PY`

func TestSandboxCannotReadHostNetwork(t *testing.T) {
	b := newNetBed(t)
	lis, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	port := fmt.Sprintf("%04X", lis.Addr().(*net.TCPAddr).Port)
	// Preconditions, on the host: the listener and the agents' sockets are
	// in the host's network namespace, where pasta's /proc would show them.
	if tcp, _ := os.ReadFile("/proc/net/tcp"); !strings.Contains(string(tcp), "0100007F:"+port) {
		t.Fatalf("precondition: the listener 127.0.0.1:%s (hex) is not in the host's /proc/net/tcp", port)
	}
	if unix, _ := os.ReadFile("/proc/net/unix"); !strings.Contains(string(unix), b.sockDir) {
		t.Fatalf("precondition: no agent socket under %s in the host's /proc/net/unix", b.sockDir)
	}
	var hostIfaces []string
	for _, ifc := range mustInterfaces(t) {
		hostIfaces = append(hostIfaces, ifc.Name)
	}
	for who, name := range map[string]string{"user": b.user, "root": b.root} {
		r := sh(t, b.srv.Client(), name, "set -- "+port+" "+b.sockDir+"; "+scanProc)
		var got struct {
			Found  []string `json:"found"`
			Ifaces []string `json:"ifaces"`
			Pasta  []string `json:"pasta"`
			Seen   int      `json:"seen"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Seen < 3 {
			t.Fatalf("%s: the scan did not run: %v %q %q", who, err, r.stdout, r.stderr)
		}
		if len(got.Found) > 0 {
			t.Errorf("%s: the host's sockets are readable from the sandbox:\n%s", who, strings.Join(got.Found, "\n"))
		}
		if len(got.Pasta) > 0 {
			t.Errorf("%s: pasta is in the sandbox's /proc (pids %v)", who, got.Pasta)
		}
		for _, ifc := range got.Ifaces {
			if contains(hostIfaces, ifc) {
				t.Errorf("%s: the host's interface %q is listed in a /proc/*/net/dev of the sandbox", who, ifc)
			}
		}
	}
	// The network still works: pasta's tap device is up beside loopback.
	probe := `python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))'`
	if r := sh(t, b.srv.Client(), b.user, probe); !strings.Contains(r.stdout, "'lo'") || strings.Count(r.stdout, "'") != 4 {
		t.Fatalf("egress Internet: interfaces %q, want loopback and pasta's tap", r.stdout)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func mustInterfaces(t *testing.T) []net.Interface {
	t.Helper()
	ifcs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	return ifcs
}

// hostAddr is one address of the host, with the interface a link-local
// one is scoped to.
type hostAddr struct {
	IP   string `json:"ip"`
	Zone string `json:"zone,omitempty"`
}

// hostAddrs reads every address of the host with `ip -j addr`.
func hostAddrs(t *testing.T) []hostAddr {
	t.Helper()
	out, err := exec.Command("ip", "-j", "addr").Output()
	if err != nil {
		t.Fatalf("ip -j addr: %v", err)
	}
	var ifcs []struct {
		Name  string `json:"ifname"`
		Addrs []struct {
			Local string `json:"local"`
			Scope string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &ifcs); err != nil {
		t.Fatalf("ip -j addr: %v", err)
	}
	var addrs []hostAddr
	for _, ifc := range ifcs {
		for _, a := range ifc.Addrs {
			h := hostAddr{IP: a.Local}
			if ip := net.ParseIP(a.Local); ip != nil && ip.IsLinkLocalUnicast() {
				h.Zone = ifc.Name
			}
			addrs = append(addrs, h)
		}
	}
	return addrs
}

// connectAll is run inside a sandbox: it tries a TCP connection to each
// address (a link-local one through each of the sandbox's interfaces) and
// prints what became of each, as JSON.
const connectAll = `python3 - "$@" <<'PY'
import json, socket, sys
port, addrs = int(sys.argv[1]), json.loads(sys.argv[2])
ifaces = [i for _, i in socket.if_nameindex() if i != "lo"]
out = {}
for a in addrs:
    ip = a["ip"]
    targets = ["%s%%%s" % (ip, i) for i in ifaces] if a.get("zone") else [ip]
    for t in targets:
        fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            info = socket.getaddrinfo(t, port, fam, socket.SOCK_STREAM)[0][4]
            s.connect(info)
            out[t] = "connected"
        except OSError as e:
            out[t] = "refused: %s" % e
        finally:
            s.close()
print(json.dumps(out))
PY`

func TestSandboxCannotReachHostAddresses(t *testing.T) {
	b := newNetBed(t)
	lis, err := net.Listen("tcp", "[::]:0") // dual stack: every IPv4 and IPv6 address of the host
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := lis.Addr().(*net.TCPAddr).Port
	addrs := hostAddrs(t)
	// Precondition: the host itself reaches the listener on each address
	// the sandbox will try (one the host cannot use itself, as a tentative
	// IPv6 address or one on an interface that is down, is left out), on
	// loopback and on at least one other address.
	var usable []hostAddr
	for _, a := range addrs {
		host := a.IP
		if a.Zone != "" {
			host += "%" + a.Zone
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, fmt.Sprint(port)), 10*time.Second)
		if err != nil {
			t.Logf("left out: the host cannot connect to its own %s: %v", host, err)
			continue
		}
		c.Close()
		usable = append(usable, a)
	}
	if len(usable) < 2 {
		t.Fatalf("precondition: the host reaches its listener on %v of its addresses %v, want loopback and another", usable, addrs)
	}
	addrs = usable
	eventually(t, "the host's own connections accepted", func() bool { return accepted.Load() == int64(len(addrs)) })
	accepted.Store(0)
	js, _ := json.Marshal(addrs)
	for who, name := range map[string]string{"user": b.user, "root": b.root} {
		r := sh(t, b.srv.Client(), name, fmt.Sprintf("set -- %d '%s'; %s", port, js, connectAll))
		var got map[string]string
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) < len(addrs) {
			t.Fatalf("%s: the probe did not run: %v %q %q", who, err, r.stdout, r.stderr)
		}
		for target, res := range got {
			if res == "connected" {
				t.Errorf("%s: the sandbox connected to the host's %s", who, target)
			}
		}
		t.Logf("%s: %v", who, got)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host's listener accepted %d connections from the sandboxes", n)
	}
}

// sandboxOnHost starts a marker process in a sandbox and finds it on the
// host: its host PID.
func sandboxOnHost(t *testing.T, srv *testserver.Server, sandbox string) string {
	t.Helper()
	marker := "sandpod-marker-" + randomHex(6)
	r := sh(t, srv.Client(), sandbox, "setsid python3 -c 'import time; time.sleep(600)' "+marker+" >/dev/null 2>&1 </dev/null & echo ok")
	if r.stdout != "ok\n" {
		t.Fatalf("start a marker: %q %q", r.stdout, r.stderr)
	}
	var pid string
	eventually(t, "the marker on the host", func() bool {
		matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, m := range matches {
			if b, _ := os.ReadFile(m); strings.Contains(string(b), "\x00"+marker+"\x00") {
				pid = filepath.Base(filepath.Dir(m))
				return true
			}
		}
		return false
	})
	return pid
}

// hostPasta finds, on the host, the pasta of the sandbox a process (host
// PID) runs in: a process named pasta that holds that process's network
// namespace as a file descriptor (its own is the host's).
func hostPasta(t *testing.T, pid string) []string {
	t.Helper()
	netns, err := os.Readlink("/proc/" + pid + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	matches, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, m := range matches {
		comm, _ := os.ReadFile(m)
		if !strings.HasPrefix(string(comm), "pasta") && !strings.HasPrefix(string(comm), "passt") {
			continue
		}
		dir := filepath.Dir(m)
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join(dir, "fd", fd.Name())); l == netns {
				pids = append(pids, filepath.Base(dir))
				break
			}
		}
	}
	return pids
}

// sandboxInit is the host PID of the init of the sandbox a process (host
// PID) runs in: the process of its PID namespace that is 1 there.
func sandboxInit(t *testing.T, pid string) string {
	t.Helper()
	pidns, err := os.Readlink("/proc/" + pid + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, m := range matches {
		dir := filepath.Dir(m)
		if l, _ := os.Readlink(filepath.Join(dir, "ns", "pid")); l != pidns {
			continue
		}
		st, _ := os.ReadFile(m)
		for _, line := range strings.Split(string(st), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "NSpid:" && f[len(f)-1] == "1" {
				return filepath.Base(dir)
			}
		}
	}
	t.Fatalf("no init in the PID namespace of %s", pid)
	return ""
}

// pasta lives outside the sandbox's PID namespace, so the kernel no longer
// ends it with the sandbox: its keeper does, on the sandbox's lifeline,
// whoever ends the sandbox (here the host, behind the engine's back).
func TestPastaEndsWithItsSandbox(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: defaultConfig})
	sb, _ := claim(t, srv.Client(), "python")
	marker := sandboxOnHost(t, srv, sb.Name)
	pasta := hostPasta(t, marker)
	if len(pasta) != 1 {
		t.Fatalf("want one pasta for the sandbox on the host, found %v", pasta)
	}
	// Charged to the sandbox: in its memory, pids and cpu cgroups, not in
	// its freezer (a pause keeps the network).
	groups := func(pid string) map[string]string {
		b, _ := os.ReadFile("/proc/" + pid + "/cgroup")
		out := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.SplitN(line, ":", 3); len(f) == 3 {
				for _, c := range strings.Split(f[1], ",") {
					out[c] = f[2]
				}
			}
		}
		return out
	}
	pg, sg := groups(pasta[0]), groups(marker)
	if limitsLayout(t, srv) == "v2" {
		// One hierarchy: pasta stays out of it (it would bring the
		// freezer along), so it is not charged (docs/security.md).
		if pg[""] == sg[""] {
			t.Errorf("pasta is in the sandbox's cgroup %q on cgroup v2", pg[""])
		}
	} else {
		for _, c := range []string{"memory", "pids", "cpu"} {
			if pg[c] != sg[c] {
				t.Errorf("pasta's %s cgroup is %q, the sandbox's %q", c, pg[c], sg[c])
			}
		}
		if pg["freezer"] == sg["freezer"] {
			t.Errorf("pasta is in the sandbox's freezer cgroup %q: a pause would stop the network", pg["freezer"])
		}
	}
	init := sandboxInit(t, marker)
	if err := exec.Command("kill", "-KILL", init).Run(); err != nil {
		t.Fatalf("kill the sandbox's init %s: %v", init, err)
	}
	eventually(t, "pasta gone with its sandbox", func() bool {
		_, err := os.Stat("/proc/" + pasta[0])
		return os.IsNotExist(err)
	})
}
