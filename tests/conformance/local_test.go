package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// localConfig is the templates of the cases for `sandpod serve`. held and
// broken carry a variable that the runc wrapper (runcWrapper) acts on: the
// local engine has no scheduler to hold a start, so the test holds runc.
const localConfig = `apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: plain
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
  lifecycle:
    defaultTTL: 1h
    shutdownPolicy: Delete
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: warm
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
  lifecycle:
    defaultTTL: 1h
    shutdownPolicy: Delete
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: warm
spec:
  templateRef:
    name: warm
  replicas: 1
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: held
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
        env:
        - name: CONFORMANCE_HOLD
          value: "1"
  lifecycle:
    defaultTTL: 1h
    shutdownPolicy: Delete
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: broken
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
        env:
        - name: CONFORMANCE_FAIL
          value: "1"
  lifecycle:
    defaultTTL: 1h
    shutdownPolicy: Delete
`

// runcWrapper stands in for runc: a container whose bundle has
// CONFORMANCE_FAIL=1 fails to start; one with CONFORMANCE_HOLD=1 waits
// while the hold file exists (at most 2 minutes; the engine gives runc 60 s)
// and then fails too, so that nothing held starts after the test.
const runcWrapper = `#!/bin/sh
bundle=""
prev=""
for a in "$@"; do
  [ "$prev" = "--bundle" ] && bundle="$a"
  prev="$a"
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  if grep -q CONFORMANCE_FAIL=1 "$bundle/config.json"; then
    echo "conformance: this template does not start" >&2
    exit 1
  fi
  if grep -q CONFORMANCE_HOLD=1 "$bundle/config.json"; then
    i=0
    while [ -e @HOLD@ ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
    echo "conformance: held, then released" >&2
    exit 1
  fi
fi
exec @RUNC@ "$@"
`

// realRunc finds runc as `sandpod serve` would.
func realRunc(t *testing.T, bin string) string {
	t.Helper()
	if r := os.Getenv("SANDPOD_RUNC"); r != "" {
		return r
	}
	if r := filepath.Join(filepath.Dir(bin), "runc"); fileExists(r) {
		return r
	}
	r, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("no runc for the local engine")
	}
	return r
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func startLocal(t *testing.T) *backend {
	t.Helper()
	bin := testserver.Binary(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	hold := filepath.Join(dir, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(hold) })
	script := strings.NewReplacer("@HOLD@", hold, "@RUNC@", realRunc(t, bin)).Replace(runcWrapper)
	wrapper := filepath.Join(dir, "runc")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(token+" default,team-a,team-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testserver.Start(t, testserver.Options{
		Config:    localConfig,
		ExtraArgs: []string{"--runc", wrapper, "--token-file", tokens},
		DialOptions: []grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(bearer(token)),
		},
	})
	anon, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = anon.Close() })
	return &backend{kind: "local", ns: "default", api: pb.NewSandboxServiceClient(srv.Conn()), anon: anon}
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }
