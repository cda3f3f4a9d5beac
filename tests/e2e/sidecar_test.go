package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// sidecarServer is a small service a sidecar runs: it answers every GET on
// 127.0.0.1:8000 with its hostname and the path asked for, so the sandbox's
// code can tell it reached the sidecar of its own pod.
const sidecarServer = `
import http.server, socket
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("sidecar of " + socket.gethostname() + " at " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", 8000), H).serve_forever()
`

// TestSidecarServesTheSandboxCode: a template whose pod has a sidecar before
// its sandbox container, named by agentContainer (runc and gVisor). Exec
// runs in the sandbox container (the agent went there, not into the first
// container), and the sandbox's code uses the sidecar's service on
// localhost, which only a container of the same pod can reach.
func TestSidecarServesTheSandboxCode(t *testing.T) {
	t.Parallel()
	for _, rc := range []string{"", GVisor} {
		name := "runc"
		if rc != "" {
			name = rc
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := Setup(t)
			ns := env.Namespace(t)
			tmpl := Template(ns, "python-sidecar", PythonImage)
			tmpl.Spec.PodTemplate.Spec.Containers = append([]corev1.Container{{
				Name: "api", Image: PythonImage, Command: []string{"python3", "-c", sidecarServer},
			}}, tmpl.Spec.PodTemplate.Spec.Containers...)
			tmpl.Spec.AgentContainer = "main"
			if rc != "" {
				tmpl.Spec.RuntimeClassName = &rc
			}
			env.Apply(t, tmpl)
			c := env.bridgeClient(t, ns)
			ctx := Context(t)
			sb, err := c.Create(ctx, "python-sidecar")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sb.Delete(ctx) }()

			// The sidecar may still be starting when the agent answers.
			fetch := `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8000/step/1', timeout=5).read().decode())"`
			var out string
			env.Eventually(t, "the sandbox's code reaching its sidecar", func() (bool, string) {
				res, err := sb.Run(ctx, fetch)
				if err != nil {
					return false, err.Error()
				}
				out = strings.TrimSpace(string(res.Stdout))
				return res.ExitCode == 0, fmt.Sprintf("exit %d: %s %s", res.ExitCode, out, res.Stderr)
			})
			if want := "sidecar of " + sb.Name() + " at /step/1"; out != want {
				t.Errorf("the sidecar answered %q, want %q", out, want)
			}

			// Exec ran in the sandbox container: the agent is among its
			// processes and the sidecar's server is not.
			res, err := sb.Run(ctx, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done`)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec: %+v %v", res, err)
			}
			if !strings.Contains(string(res.Stdout), "agent") || strings.Contains(string(res.Stdout), "HTTPServer") {
				t.Errorf("exec did not run in the sandbox container alone: %s", res.Stdout)
			}
		})
	}
}
