package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandpod/sandpod/tests/testserver"
)

// A template that asks for a second kernel (gVisor) must not silently get
// runc on the host's kernel: serve refuses the template at start, naming it
// and the field, and says that the local engine runs runc only.
func TestServeRefusesARuntimeClassItCannotHonour(t *testing.T) {
	for field, cfg := range map[string]string{
		"spec.runtimeClassName": testserver.PythonTemplate + "  runtimeClassName: gvisor\n",
		"spec.podTemplate.spec.runtimeClassName": strings.Replace(testserver.PythonTemplate,
			"    spec:\n      containers:", "    spec:\n      runtimeClassName: gvisor\n      containers:", 1),
	} {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out := sandpod(t, "serve", "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(t.TempDir(), "state"), "--config", path)
		if code == 0 {
			t.Fatalf("%s: serve started with runtimeClassName gvisor (exit 0):\n%s", field, out)
		}
		for _, want := range []string{"SandboxTemplate python", field + ` is \"gvisor\"`, "runs only runc"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: serve's message lacks %q:\n%s", field, want, out)
			}
		}
	}
	// An empty value is the default runtime, runc: served as before.
	srv := startServer(t, strings.Replace(testserver.PythonTemplate, "  autoResume: true\n", "  autoResume: true\n  runtimeClassName: \"\"\n", 1))
	sb, _ := claim(t, srv.Client(), "python")
	if r := sh(t, srv.Client(), sb.GetName(), "echo ok"); strings.TrimSpace(r.stdout) != "ok" {
		t.Fatalf("sandbox of a template with an empty runtimeClassName: %+v", r)
	}
}
