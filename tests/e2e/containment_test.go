package e2e

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The local engine's second containment round, checked where the same
// weakness could exist on Kubernetes: the sandbox pod under runc and under
// gVisor. Per-user kernel budgets are not checked here: a pod without
// `hostUsers: false` runs as a node uid and is charged like any process of
// that uid (docs/security.md says so).
func TestPodContainmentRoundTwo(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	for _, runtime := range []string{"runc", GVisor} {
		t.Run(runtime, func(t *testing.T) {
			tmpl := Template(ns, "python-"+runtime, PythonImage)
			if runtime == GVisor {
				rc := GVisor
				tmpl.Spec.RuntimeClassName = &rc
			}
			env.Apply(t, tmpl)
			_, sb := env.Claim(t, ns, "contain-"+runtime, tmpl.Name)
			a := env.Agent(t, sb)
			ctx := Context(t)

			// vsock is not namespaced: a pod must not open it (runc: the
			// runtime's default seccomp profile; gVisor: not implemented).
			// The control (an AF_UNIX socket) shows the probe itself runs.
			res, err := a.Shell(ctx, `python3 -c '
import socket
socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
print("unix ok")
try:
    socket.socket(40, socket.SOCK_STREAM)
    print("vsock OPEN")
except OSError as e:
    print("vsock refused", e.errno)
'`)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("vsock probe: %+v, %v", res, err)
			}
			if !strings.Contains(res.Stdout, "unix ok") || !strings.Contains(res.Stdout, "vsock refused") {
				t.Errorf("vsock probe printed %q, want the unix control and vsock refused", res.Stdout)
			}

			// The pod's /proc holds the pod's own processes only (no
			// shared PID namespace with the node or a helper in it).
			res, err = a.Shell(ctx, `for p in /proc/[0-9]*; do cat $p/comm 2>/dev/null; done | sort | uniq -c`)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("process list: %+v, %v", res, err)
			}
			for _, host := range []string{"kubelet", "containerd", "kube-apiserver", "etcd", "pasta"} {
				if strings.Contains(res.Stdout, host) {
					t.Errorf("the pod sees a %s process:\n%s", host, res.Stdout)
				}
			}
			if !strings.Contains(res.Stdout, "sandpod") {
				t.Errorf("the pod's process list has no agent (the probe saw nothing?):\n%s", res.Stdout)
			}

			// Special files through the files API: an answer at once, not a
			// hang on a fifo or an endless /dev/zero.
			if res, err := a.Shell(ctx, `mkfifo fifo && ln -s /dev/zero zero && echo ok`); err != nil || strings.TrimSpace(res.Stdout) != "ok" {
				t.Fatalf("plant special files: %+v, %v", res, err)
			}
			for _, name := range []string{"fifo", "zero"} {
				callCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
				code, n := readAll(callCtx, a, name)
				cancel()
				if code != codes.FailedPrecondition {
					t.Errorf("ReadFile %s: code %s after %d bytes, want FailedPrecondition", name, code, n)
				}
			}
		})
	}
}

// readAll reads a file through the agent to its end and returns the code
// the stream ended with and the bytes it carried.
func readAll(ctx context.Context, a *Agent, path string) (codes.Code, int) {
	stream, err := a.Client.ReadFile(a.Context(ctx), &sandpodv1.ReadFileRequest{Path: path})
	if err != nil {
		return status.Code(err), 0
	}
	n := 0
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return codes.OK, n
		}
		if err != nil {
			return status.Code(err), n
		}
		n += len(msg.GetData())
	}
}
