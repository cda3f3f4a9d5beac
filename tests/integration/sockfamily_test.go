package integration

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandpod/sandpod/tests/testserver"
)

// familyProbe opens a socket of each family a sandbox must not have and
// prints each errno; for AF_VSOCK it also binds the port in argv[1] if it
// can, and holds it while the test binds the same port on the host.
const familyProbe = `
import errno, socket, sys, time
families = {"vsock": (40, socket.SOCK_STREAM), "alg": (38, socket.SOCK_SEQPACKET), "packet": (17, socket.SOCK_DGRAM),
            "key": (15, socket.SOCK_RAW), "rds": (21, socket.SOCK_SEQPACKET), "tipc": (30, socket.SOCK_RDM),
            "bluetooth": (31, socket.SOCK_STREAM), "xdp": (44, socket.SOCK_RAW), "kcm": (41, socket.SOCK_DGRAM),
            "unix": (1, socket.SOCK_STREAM), "inet": (2, socket.SOCK_STREAM), "inet6": (10, socket.SOCK_DGRAM),
            "netlink": (16, socket.SOCK_RAW)}
out, held = [], None
for name, (fam, typ) in sorted(families.items()):
    try:
        s = socket.socket(fam, typ)
    except OSError as e:
        out.append("%s=%s" % (name, errno.errorcode.get(e.errno, e.errno)))
        continue
    out.append("%s=open" % name)
    if name == "vsock":
        try:
            s.bind((socket.VMADDR_CID_ANY, int(sys.argv[1])))
            s.listen()
            held = s
        except OSError as e:
            pass
print(" ".join(out), flush=True)
if held is not None:
    time.sleep(600)
`

// AF_VSOCK is not namespaced: a sandbox that could open one would bind the
// VM's ports (squatting host services, taking their connections) and talk
// to the hypervisor, egress None included (template offline, rootConfig).
// The seccomp filter refuses it, and every family the sandbox's network
// namespace does not contain.
func TestSandboxCannotOpenSocketsOutsideItsNetworkNamespace(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: storeConfig + rootConfig})
	c := srv.Client()
	const want = "alg=EAFNOSUPPORT bluetooth=EAFNOSUPPORT inet=open inet6=open kcm=EAFNOSUPPORT key=EAFNOSUPPORT " +
		"netlink=open packet=EAFNOSUPPORT rds=EAFNOSUPPORT tipc=EAFNOSUPPORT unix=open vsock=EAFNOSUPPORT xdp=EAFNOSUPPORT"
	for template, egress := range map[string]string{"python": "Internet", "offline": "None"} {
		sb, _ := claim(t, c, template)
		if err := writeFile(t, c, sb.GetName(), "probe.py", []byte(familyProbe)); err != nil {
			t.Fatal(err)
		}
		port := 20000 + rand.Uint32N(40000)
		sh(t, c, sb.GetName(), fmt.Sprintf("setsid -f sh -c 'exec python3 probe.py %d > probe.out 2>&1' </dev/null", port))
		var got string
		eventually(t, "the probe's answer in "+template, func() bool {
			b, err := readFile(t, c, sb.GetName(), "probe.out")
			got = strings.TrimSpace(string(b))
			return err == nil && strings.Contains(got, "=")
		})
		if got != want {
			t.Errorf("%s (egress %s): sockets\n got %s\nwant %s", sb.GetName(), egress, got, want)
		}
		// The host keeps its vsock ports: the same port binds here.
		if err := bindVsock(port); err != nil {
			t.Errorf("host bind of vsock port %d while %s tried to hold it: %v", port, sb.GetName(), err)
		}
	}
}

func bindVsock(port uint32) error {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: port}); err != nil {
		if errors.Is(err, unix.EADDRINUSE) {
			return fmt.Errorf("bind: %w (a sandbox holds it)", err)
		}
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}
