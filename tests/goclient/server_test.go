package goclient_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/tests/testserver"
	"google.golang.org/grpc"
)

// startShared starts the server shared by the examples and most tests.
func startShared() (addr string, stop func(), err error) {
	tb := &mainTB{name: "TestMain"}
	srv := testserver.Start(tb, testserver.Options{Config: testConfig, ExtraArgs: []string{"--preview-listen", "127.0.0.1:0"}})
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
	// Count the attempts that failed (and were retried), for the log: how
	// many depends on timing, so it is not asserted.
	var failed atomic.Int32
	count := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err != nil {
			failed.Add(1)
		}
		return err
	})
	c := dial(t, srv.Addr(), sandpod.WithDialOptions(count))
	run := fmt.Sprintf("restart-%d", time.Now().UnixNano())
	labels := map[string]string{"run": run}

	// Three callers claim (and read back) four sandboxes each while the
	// server goes down twice under them.
	const workers, perWorker = 3, 4
	var (
		mu   sync.Mutex
		got  []string
		errs []error
		wg   sync.WaitGroup
	)
	started := make(chan struct{}, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				if i == 1 {
					started <- struct{}{}
				}
				sb, err := c.Claim(ctx, "python", sandpod.WithLabels(labels))
				if err == nil {
					_, err = c.Get(ctx, sb.Name())
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("worker %d, claim %d: %w", w, i, err))
				} else {
					got = append(got, sb.Name())
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	for range workers {
		<-started
	}
	srv.Restart(t) // SIGTERM, start again
	srv.Kill(t)    // SIGKILL: a crash
	srv.StartAgain(t)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	t.Logf("%d attempts failed during the restarts and were retried", failed.Load())
	const claims = workers * perWorker
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

// TestReadResumesAcrossRestart reads a file while the server restarts: the
// reader reopens the stream at the offset it reached and every byte
// arrives once.
func TestReadResumesAcrossRestart(t *testing.T) {
	srv := startServer(t, testserver.Options{})
	ctx := testContext(t)
	var opens atomic.Int32
	countOpens := grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if strings.HasSuffix(method, "/ReadFile") {
			opens.Add(1)
		}
		return streamer(ctx, desc, cc, method, opts...)
	})
	// A small, fixed flow-control window, so that the server cannot send
	// the whole file ahead of the reader.
	c := dial(t, srv.Addr(), sandpod.WithDialOptions(countOpens,
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
	sb := claim(t, c, "python")
	data := make([]byte, 4<<20)
	_, _ = rand.Read(data)
	if _, err := sb.Files().WriteFile(ctx, "big.bin", data); err != nil {
		t.Fatal(err)
	}

	r, err := sb.Files().Read(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]byte, 1<<20)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read after restart: %v", err)
	}
	got = append(got, rest...)
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want %d (or different bytes)", len(got), len(data))
	}
	t.Logf("the read used %d streams", opens.Load())
}
