package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sandpod/sandpod/core/preflight"
	"github.com/sandpod/sandpod/tests/testserver"
)

// `sandpod preflight` against an API server that does not answer: the API
// server row fails, every other row is skipped (not "missing" CRDs or "0
// classes"), and the command exits 1.
func TestPreflightUnreachableAPIServer(t *testing.T) {
	// A loopback port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://` + addr + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(testserver.Binary(t), "preflight", "--kubeconfig", kubeconfig, "--skip-probes", "-o", "json")
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want 1\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	var rep preflight.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Results) < 2 || rep.Results[0].Check != "API server" || rep.Results[0].Status != preflight.Fail {
		t.Fatalf("rows %+v, want the API server failing first", rep.Results)
	}
	for _, r := range rep.Results[1:] {
		if r.Status != preflight.Skip || r.Detail != "skipped: API server unreachable" {
			t.Errorf("%s: %s %q, want skip: API server unreachable", r.Check, r.Status, r.Detail)
		}
	}
}
