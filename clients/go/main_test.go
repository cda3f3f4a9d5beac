//go:build sandpod_draft

package sandpod_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sandpod/sandpod/tests/testserver"
)

// testConfig is the server's templates and pools: "python" (warm pool of
// 2, auto-resume) and "cold" (no pool, no auto-resume).
const testConfig = `apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: python
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/library/python:3
  lifecycle:
    defaultTTL: 1h
    shutdownPolicy: Delete
  autoResume: true
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: python
spec:
  templateRef:
    name: python
  replicas: 2
---
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
	tb := &mainTB{name: "TestMain"}
	defer tb.cleanup()
	srv := testserver.Start(tb, testserver.Options{Config: testConfig})
	if tb.failed {
		return 1
	}
	serverAddr = srv.Addr()
	return m.Run()
}

// startServer starts a server of its own for a test that restarts it or
// needs other settings.
func startServer(t *testing.T, opts testserver.Options) *testserver.Server {
	t.Helper()
	if opts.Config == "" {
		opts.Config = testConfig
	}
	return testserver.Start(t, opts)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// mainTB lets TestMain use testserver.Start, which wants a testing.TB.
type mainTB struct {
	testing.TB // nil: methods not below panic
	name       string
	failed     bool
	cleanups   []func()
	dirs       []string
}

func (tb *mainTB) Helper()          {}
func (tb *mainTB) Name() string     { return tb.name }
func (tb *mainTB) Failed() bool     { return tb.failed }
func (tb *mainTB) Cleanup(f func()) { tb.cleanups = append(tb.cleanups, f) }
func (tb *mainTB) Log(a ...any)     { fmt.Fprintln(os.Stderr, a...) }
func (tb *mainTB) Logf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, f+"\n", a...)
}
func (tb *mainTB) Error(a ...any)            { tb.failed = true; tb.Log(a...) }
func (tb *mainTB) Errorf(f string, a ...any) { tb.failed = true; tb.Logf(f, a...) }
func (tb *mainTB) Fatal(a ...any)            { tb.Error(a...); tb.cleanup(); os.Exit(1) }
func (tb *mainTB) Fatalf(f string, a ...any) {
	tb.Errorf(f, a...)
	tb.cleanup()
	os.Exit(1)
}
func (tb *mainTB) TempDir() string {
	d, err := os.MkdirTemp("", "sandpod-go-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}
func (tb *mainTB) Context() context.Context { return context.Background() }

func (tb *mainTB) cleanup() {
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
	tb.cleanups = nil
}
