package goclient_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/tests/testserver"
)

// testConfig is the server's templates and pools: "python" (warm pool of
// 2, auto-resume) and "cold" (no pool, no auto-resume).
var testConfig = testserver.PythonPool(2) + `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: cold
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/library/python:3
  lifecycle:
    defaultTTL: 1h
  autoResume: false
`

// serverAddr is the address of the server shared by the examples and most
// tests, started by TestMain.
var serverAddr string

// testTimeout bounds every test's calls: generous, for a loaded machine.
const testTimeout = 3 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// Hermetic: the caller's settings must not reach the tests' clients.
	for _, k := range []string{sandpod.EnvAddress, sandpod.EnvToken, sandpod.EnvNamespace} {
		_ = os.Unsetenv(k)
	}
	addr, stop, err := startShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting sandpod serve:", err)
		return 1
	}
	defer stop()
	serverAddr = addr
	return m.Run()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
