package sandpod_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/tests/testserver"
)

// startShared starts the server shared by the examples and most tests.
func startShared() (addr string, stop func(), err error) {
	tb := &mainTB{name: "TestMain"}
	srv := testserver.Start(tb, testserver.Options{Config: testConfig})
	if tb.failed {
		tb.cleanup()
		return "", nil, errors.New("see the log above")
	}
	return srv.Addr(), tb.cleanup, nil
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

func TestToken(t *testing.T) {
	srv := startServer(t, testserver.Options{Token: "s3cret"})
	ctx := testContext(t)

	anon := dial(t, srv.Addr())
	if _, err := anon.ListAll(ctx); !errors.Is(err, sandpod.ErrUnauthenticated) {
		t.Errorf("no token: %v", err)
	}
	wrong := dial(t, srv.Addr(), sandpod.WithToken("wrong"))
	if _, err := wrong.ListAll(ctx); !errors.Is(err, sandpod.ErrUnauthenticated) {
		t.Errorf("wrong token: %v", err)
	}
	good := dial(t, srv.Addr(), sandpod.WithToken("s3cret"))
	sb := claim(t, good, "python")
	if res, err := sb.Run(ctx, "echo ok"); err != nil || string(res.Stdout) != "ok\n" {
		t.Errorf("with token: %v", err)
	}
}

// TestRestartKeepsOneSandboxPerClaim claims sandboxes in a loop while the
// server is restarted (gracefully, then killed) under it. Every claim must
// succeed exactly once: afterwards the server lists exactly the sandboxes
// the claims returned, each still usable.
func TestRestartKeepsOneSandboxPerClaim(t *testing.T) {
	srv := startServer(t, testserver.Options{})
	ctx := testContext(t)
	c := dial(t, srv.Addr())
	run := fmt.Sprintf("restart-%d", time.Now().UnixNano())
	labels := map[string]string{"run": run}

	const claims = 12
	names := make(chan string, claims)
	errs := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		defer close(names)
		for i := range claims {
			if i == 2 {
				close(started)
			}
			sb, err := c.Claim(ctx, "python", sandpod.WithLabels(labels))
			if err != nil {
				errs <- fmt.Errorf("claim %d: %w", i, err)
				return
			}
			names <- sb.Name()
		}
	}()
	<-started
	srv.Restart(t) // SIGTERM, start again
	srv.Kill(t)    // SIGKILL: a crash
	srv.StartAgain(t)

	var got []string
	for n := range names {
		got = append(got, n)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	slices.Sort(got)
	if len(slices.Compact(slices.Clone(got))) != claims {
		t.Fatalf("claims returned duplicate sandboxes: %v", got)
	}

	listed, err := c.ListAll(ctx, sandpod.WithLabelSelector("run="+run))
	if err != nil {
		t.Fatal(err)
	}
	var listedNames []string
	for _, sb := range listed {
		listedNames = append(listedNames, sb.Name())
		if !sb.Info().Claimed {
			t.Errorf("%s is listed but not claimed", sb)
		}
	}
	slices.Sort(listedNames)
	if !slices.Equal(listedNames, got) {
		t.Fatalf("leaked or lost sandboxes:\nclaimed %v\nlisted  %v", got, listedNames)
	}
	for _, sb := range listed {
		if res, err := sb.Run(ctx, "echo alive"); err != nil || string(res.Stdout) != "alive\n" {
			t.Errorf("%s after restart: %v", sb, err)
		}
		if err := sb.Delete(ctx); err != nil {
			t.Errorf("delete %s: %v", sb, err)
		}
	}
	if rest, err := c.ListAll(ctx, sandpod.WithLabelSelector("run="+run)); err != nil || len(rest) != 0 {
		t.Errorf("after delete: %d left, %v", len(rest), err)
	}
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
