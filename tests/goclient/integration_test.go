package goclient_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// These tests run against the real `sandpod serve`. They assert outcomes,
// never timings: every wait is bounded by testTimeout only.

// patient retries for as long as the test may run: a restarting server on
// a loaded machine can take a while to come back.
var patient = sandpod.RetryPolicy{InitialInterval: 50 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: testTimeout}

func dial(t *testing.T, addr string, opts ...sandpod.Option) *sandpod.Client {
	t.Helper()
	c, err := sandpod.Dial(context.Background(), addr, append([]sandpod.Option{sandpod.WithRetryPolicy(patient)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// claim claims a sandbox of the shared server, deleted when the test ends.
func claim(t *testing.T, c *sandpod.Client, template string, opts ...sandpod.SandboxOption) *sandpod.Sandbox {
	t.Helper()
	sb, err := c.Claim(testContext(t), template, opts...)
	if err != nil {
		t.Fatalf("claim %s: %v", template, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := sb.Delete(ctx); err != nil && !errors.Is(err, sandpod.ErrNotFound) {
			t.Errorf("delete %s: %v", sb, err)
		}
	})
	return sb
}

func TestClaimRunAndFiles(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python", sandpod.WithEnv(map[string]string{"FROM_CLAIM": "c"}))
	if info := sb.Info(); info.Phase != sandpod.PhaseRunning || !info.Claimed || info.Template != "python" {
		t.Fatalf("claimed sandbox: %+v", info)
	}

	res, err := sb.Run(ctx, `echo "$FROM_CLAIM $FROM_RUN"; echo to-stderr >&2; exit 5`,
		sandpod.WithEnv(map[string]string{"FROM_RUN": "r"}))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "c r\n" || string(res.Stderr) != "to-stderr\n" || res.ExitCode != 5 || res.Success() {
		t.Errorf("run: %+v", res)
	}

	res, err = sb.RunArgv(ctx, []string{"python3", "-c", "import sys; print(sys.argv[1:])", "a b", "c"})
	if err != nil || string(res.Stdout) != "['a b', 'c']\n" {
		t.Errorf("argv: %v %+v (stderr %q)", err, res, res.Stderr)
	}

	// Files: write, stat, list, read, working dir, remove.
	files := sb.Files()
	if _, err := files.MkDir(ctx, "w/sub", sandpod.WithParents()); err != nil {
		t.Fatal(err)
	}
	if _, err := files.WriteFile(ctx, "w/sub/run.sh", []byte("echo from-file\n"), sandpod.WithMode(0o755)); err != nil {
		t.Fatal(err)
	}
	info, err := files.Stat(ctx, "w/sub/run.sh")
	if err != nil || info.Size != 15 || info.Mode.Perm() != 0o755 || info.IsDir || info.Name != "run.sh" {
		t.Errorf("stat: %+v %v", info, err)
	}
	res, err = sb.Run(ctx, "./run.sh && pwd | grep -c /w/sub$", sandpod.WithDir("w/sub"), sandpod.WithCheck())
	if err != nil || string(res.Stdout) != "from-file\n1\n" {
		t.Errorf("run in dir: %v %q", err, res.Stdout)
	}
	entries, err := files.List(ctx, "w")
	if err != nil || len(entries) != 1 || entries[0].Name != "sub" || !entries[0].IsDir {
		t.Errorf("list: %+v %v", entries, err)
	}
	part, err := files.ReadFile(ctx, "w/sub/run.sh", sandpod.WithRange(5, 4))
	if err != nil || string(part) != "from" {
		t.Errorf("range read: %q %v", part, err)
	}
	if err := files.Remove(ctx, "w", sandpod.WithRecursive()); err != nil {
		t.Fatal(err)
	}
	if _, err := files.Stat(ctx, "w"); !errors.Is(err, sandpod.ErrFileNotFound) {
		t.Errorf("stat after remove: %v", err)
	}
	if ok, err := files.Exists(ctx, "w"); ok || err != nil {
		t.Errorf("exists after remove: %v %v", ok, err)
	}

	// The sandbox is listed with its labels, and Get finds it.
	got, err := c.Get(ctx, sb.Name())
	if err != nil || got.Info().UID != sb.Info().UID {
		t.Errorf("get: %v %+v", err, got)
	}
}

func TestExecTimeoutAndSignal(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")

	res, err := sb.Run(ctx, "sleep 600", sandpod.WithTimeout(time.Second))
	if err != nil || !res.TimedOut || res.Success() {
		t.Errorf("timeout: %v %+v", err, res)
	}
	_, err = sb.Run(ctx, "sleep 600", sandpod.WithTimeout(time.Second), sandpod.WithCheck())
	var ce *sandpod.CommandError
	if !errors.As(err, &ce) || !errors.Is(err, sandpod.ErrTimeout) {
		t.Errorf("timeout with check: %v", err)
	}

	p, err := sb.Start(ctx, "echo started; exec sleep 600")
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len("started\n"))
	if _, err := io.ReadFull(p.Stdout(), line); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(15); err != nil {
		t.Fatal(err)
	}
	res, err = p.Wait()
	if err != nil || res.Signal != 15 || res.ExitCode != -1 {
		t.Errorf("signal: %v %+v", err, res)
	}

	// The call's context ends a command too.
	cctx, cancel := context.WithCancel(ctx)
	p, err = sb.Start(cctx, "sleep 600")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

// TestLargeStreams moves a few MiB through exec stdin/stdout and through
// the file streams, checking every byte.
func TestLargeStreams(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")
	data := make([]byte, 5<<20+123)
	_, _ = rand.Read(data)
	want := sha256.Sum256(data)

	// stdin -> cat -> stdout, read while writing.
	p, err := sb.Start(ctx, "cat")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	go func() {
		defer wg.Done()
		if _, werr = io.Copy(p.Stdin(), bytes.NewReader(data)); werr == nil {
			werr = p.Stdin().Close()
		}
	}()
	h := sha256.New()
	n, err := io.Copy(h, p.Stdout())
	wg.Wait()
	if err != nil || werr != nil {
		t.Fatalf("stream: read %v, write %v", err, werr)
	}
	if n != int64(len(data)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("cat returned %d bytes, want %d (or different bytes)", n, len(data))
	}
	if res, err := p.Wait(); err != nil || res.ExitCode != 0 {
		t.Fatalf("wait: %v %+v", err, res)
	}

	// Files: stream in from an io.Reader, hash inside, stream out.
	if _, err := sb.Files().Write(ctx, "big.bin", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(ctx, "sha256sum big.bin | cut -d' ' -f1", sandpod.WithCheck())
	if err != nil || strings.TrimSpace(string(res.Stdout)) != fmt.Sprintf("%x", want) {
		t.Fatalf("sha256 in sandbox: %v %q", err, res.Stdout)
	}
	r, err := sb.Files().Read(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h.Reset()
	if n, err := io.Copy(h, r); err != nil || n != int64(len(data)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("read back %d bytes: %v", n, err)
	}

	// Large output of Run.
	res, err = sb.Run(ctx, "head -c 3000000 big.bin", sandpod.WithCheck())
	if err != nil || !bytes.Equal(res.Stdout, data[:3000000]) || res.StdoutTruncated {
		t.Fatalf("large output: %v, %d bytes", err, len(res.Stdout))
	}
}

func TestSuspendResume(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	for _, tc := range []struct {
		template   string
		autoResume bool
	}{{"cold", false}, {"python", true}} {
		t.Run(tc.template, func(t *testing.T) {
			sb := claim(t, c, tc.template)
			if _, err := sb.Files().WriteFile(ctx, "kept.txt", []byte("still here")); err != nil {
				t.Fatal(err)
			}
			if err := sb.Suspend(ctx); err != nil {
				t.Fatal(err)
			}
			if ph := sb.Info().Phase; ph != sandpod.PhaseSuspended {
				t.Fatalf("after suspend: %s", ph)
			}
			if got, err := c.Get(ctx, sb.Name()); err != nil || got.Info().Phase != sandpod.PhaseSuspended {
				t.Fatalf("get after suspend: %v %+v", err, got)
			}
			if !tc.autoResume {
				if _, err := sb.Run(ctx, "true"); !errors.Is(err, sandpod.ErrFailedPrecondition) {
					t.Errorf("run while suspended: %v", err)
				}
				if err := sb.Resume(ctx); err != nil {
					t.Fatal(err)
				}
				if ph := sb.Info().Phase; ph != sandpod.PhaseRunning {
					t.Fatalf("after resume: %s", ph)
				}
			}
			res, err := sb.Run(ctx, "cat kept.txt", sandpod.WithCheck())
			if err != nil || string(res.Stdout) != "still here" {
				t.Fatalf("after resume: %v %q", err, res.Stdout)
			}
			if err := sb.Extend(ctx, 2*time.Hour); err != nil {
				t.Fatal(err)
			}
			if st := sb.Info().ShutdownTime; st.IsZero() || time.Until(st) < time.Hour {
				t.Errorf("shutdown time after extend: %v", st)
			}
		})
	}
}

// TestPauseResume: a process keeps its memory across Pause and Resume; a
// call on a paused sandbox without auto-resume fails with the reason to
// branch on, and one with auto-resume thaws it first.
func TestPauseResume(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	for _, tc := range []struct {
		template   string
		autoResume bool
	}{{"cold", false}, {"python", true}} {
		t.Run(tc.template, func(t *testing.T) {
			sb := claim(t, c, tc.template)
			// A value that lives only in a process's memory: a shell holding
			// a random variable (sh has no $RANDOM), answering each line on a
			// fifo with it. v.txt appears whole (a rename) once it is set.
			if _, err := sb.Run(ctx, `mkfifo q a && (v=$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); echo $v > v.tmp && mv v.tmp v.txt; while read _ < q; do echo $v > a; done) >/dev/null 2>&1 &`, sandpod.WithCheck()); err != nil {
				t.Fatal(err)
			}
			var want []byte
			for deadline := time.Now().Add(time.Minute); len(want) == 0; time.Sleep(20 * time.Millisecond) {
				want, _ = sb.Files().ReadFile(ctx, "v.txt")
				if time.Now().After(deadline) {
					t.Fatal("the shell never wrote its value to v.txt")
				}
			}
			if strings.TrimSpace(string(want)) == "" {
				t.Fatalf("the shell's value is empty: %q", want)
			}
			if err := sb.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			if ph := sb.Info().Phase; ph != sandpod.PhasePaused {
				t.Fatalf("after pause: %s", ph)
			}
			if err := sb.Pause(ctx); err != nil {
				t.Fatalf("pause of a paused sandbox: %v", err)
			}
			if !tc.autoResume {
				_, err := sb.Run(ctx, "true")
				var e *sandpod.Error
				if !errors.Is(err, sandpod.ErrFailedPrecondition) || !errors.As(err, &e) || e.Reason != sandpod.ReasonSandboxPaused {
					t.Fatalf("run while paused: %v, want ErrFailedPrecondition with reason %s", err, sandpod.ReasonSandboxPaused)
				}
				if err := sb.Resume(ctx); err != nil {
					t.Fatal(err)
				}
				if ph := sb.Info().Phase; ph != sandpod.PhaseRunning {
					t.Fatalf("after resume: %s", ph)
				}
			}
			res, err := sb.Run(ctx, "echo > q; cat a", sandpod.WithCheck())
			if err != nil || string(res.Stdout) != string(want) {
				t.Fatalf("the value in memory after pause and resume: %q %v, want %q", res.Stdout, err, want)
			}
		})
	}
}

func TestTypedErrors(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")

	tests := map[string]struct {
		call func() error
		want error
	}{
		"get missing":    {func() error { _, err := c.Get(ctx, "no-such-sandbox"); return err }, sandpod.ErrSandboxNotFound},
		"delete missing": {func() error { return c.Delete(ctx, "no-such-sandbox") }, sandpod.ErrSandboxNotFound},
		"claim unknown template": {func() error {
			_, err := c.Claim(ctx, "no-such-template")
			return err
		}, sandpod.ErrNotFound},
		"create bad name": {func() error {
			_, err := c.Create(ctx, "python", sandpod.WithName("Not_A_DNS_Label"))
			return err
		}, sandpod.ErrInvalidArgument},
		"create existing name": {func() error {
			_, err := c.Create(ctx, "python", sandpod.WithName(sb.Name()))
			return err
		}, sandpod.ErrAlreadyExists},
		"bad selector": {func() error {
			_, err := c.ListAll(ctx, sandpod.WithLabelSelector("a in in ("))
			return err
		}, sandpod.ErrInvalidArgument},
		"run on missing sandbox": {func() error {
			_, err := c.Sandbox("no-such-sandbox").Run(ctx, "true")
			return err
		}, sandpod.ErrSandboxNotFound},
		"path outside the root": {func() error {
			_, err := sb.Files().ReadFile(ctx, "../../etc/passwd")
			return err
		}, sandpod.ErrInvalidArgument},
		"read missing file": {func() error {
			_, err := sb.Files().ReadFile(ctx, "nope.txt")
			return err
		}, sandpod.ErrFileNotFound},
		"empty command": {func() error {
			_, err := sb.RunArgv(ctx, nil)
			return err
		}, sandpod.ErrInvalidArgument},
	}
	// The server's ErrorInfo reason of each (docs/api.md), as Error.Reason.
	reasons := map[string]string{
		"get missing": "SANDBOX_NOT_FOUND", "delete missing": "SANDBOX_NOT_FOUND",
		"claim unknown template": "TEMPLATE_NOT_FOUND", "create bad name": "INVALID_NAME",
		"create existing name": "SANDBOX_EXISTS", "bad selector": "INVALID_SELECTOR",
		"run on missing sandbox": "SANDBOX_NOT_FOUND", "path outside the root": "INVALID_PATH",
		"read missing file": "FILE_NOT_FOUND", "empty command": "INVALID_COMMAND",
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var e *sandpod.Error
			if !errors.As(err, &e) || e.GRPCStatus() == nil {
				t.Fatalf("not an *Error with a status: %#v", err)
			}
			if e.Reason != reasons[name] {
				t.Errorf("Reason = %q, want %q", e.Reason, reasons[name])
			}
		})
	}
}

// TestCreateRequestIDAcrossClients: the same request id from two calls
// (as after a crash of the caller) returns the same sandbox.
func TestCreateRequestID(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	id := fmt.Sprintf("go-test-%d", time.Now().UnixNano())
	a, err := c.Create(ctx, "cold", sandpod.WithRequestID(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Delete(context.Background()) })
	b, err := c.Create(ctx, "cold", sandpod.WithRequestID(id))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != b.Name() || a.Info().UID != b.Info().UID {
		t.Errorf("same request id, two sandboxes: %s %s", a, b)
	}
	if a.Info().Phase != sandpod.PhaseRunning || a.Warm() {
		t.Errorf("create: %+v", a.Info())
	}
}

func TestWatch(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	run := fmt.Sprintf("watch-%d", time.Now().UnixNano())
	sb, err := c.Claim(ctx, "python", sandpod.WithLabels(map[string]string{"run": run}))
	if err != nil {
		t.Fatal(err)
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events := make(chan sandpod.Event, 100)
	done := make(chan error, 1)
	go func() {
		defer close(events)
		for ev, err := range c.Watch(wctx, sandpod.WithLabelSelector("run="+run), sandpod.WithInitialEvents()) {
			if err != nil {
				done <- err
				return
			}
			events <- ev
		}
		done <- nil
	}()
	// waitFor reads events until one matches.
	waitFor := func(what string, match func(sandpod.Event) bool) {
		t.Helper()
		for ev := range events {
			if ev.Sandbox.Name != sb.Name() {
				t.Errorf("event for a sandbox outside the selector: %+v", ev)
			}
			if match(ev) {
				return
			}
		}
		t.Fatalf("watch ended before %s: %v", what, <-done)
	}
	// The initial event proves the watch is running.
	waitFor("the initial event", func(ev sandpod.Event) bool { return ev.Type == sandpod.EventAdded })
	if err := sb.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor("suspended", func(ev sandpod.Event) bool {
		return ev.Type == sandpod.EventModified && ev.Sandbox.Phase == sandpod.PhaseSuspended
	})
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor("deleted", func(ev sandpod.Event) bool { return ev.Type == sandpod.EventDeleted })
	stop()
	for range events {
	}
	if err := <-done; err != nil {
		t.Errorf("watch ended with %v, want nil after cancel", err)
	}
}

func TestClaimMany(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	run := fmt.Sprintf("many-%d", time.Now().UnixNano())
	id := "go-" + run
	sbs, err := c.ClaimMany(ctx, "python", 5, sandpod.WithConcurrency(3), sandpod.WithRequestID(id),
		sandpod.WithLabels(map[string]string{"run": run}))
	if err != nil {
		t.Fatal(err)
	}
	// The same request id again (a caller that crashed and retried) gets
	// the same sandboxes.
	again, err := c.ClaimMany(ctx, "python", 5, sandpod.WithRequestID(id), sandpod.WithLabels(map[string]string{"run": run}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sbs {
		if sbs[i].Name() != again[i].Name() {
			t.Errorf("claim %d: %s, then %s", i, sbs[i], again[i])
		}
	}
	// Pages of two: List follows the page tokens.
	listed, err := c.ListAll(ctx, sandpod.WithLabelSelector("run="+run), sandpod.WithPageSize(2))
	if err != nil || len(listed) != 5 {
		t.Fatalf("listed %d, %v", len(listed), err)
	}
	page, next, err := c.ListPage(ctx, sandpod.WithLabelSelector("run="+run), sandpod.WithPageSize(2))
	if err != nil || len(page) != 2 || next == "" {
		t.Fatalf("first page: %d, %q, %v", len(page), next, err)
	}
	for _, sb := range sbs {
		if err := sb.Delete(ctx); err != nil {
			t.Error(err)
		}
	}
	// A batch that cannot complete leaves nothing behind.
	if _, err := c.ClaimMany(ctx, "no-such-template", 3, sandpod.WithLabels(map[string]string{"run": run})); !errors.Is(err, sandpod.ErrNotFound) {
		t.Errorf("bad batch: %v", err)
	}
	if left, err := c.ListAll(ctx, sandpod.WithLabelSelector("run="+run)); err != nil || len(left) != 0 {
		t.Errorf("left behind: %d, %v", len(left), err)
	}
}

func TestCreateNoWaitAndPools(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb, err := c.Create(ctx, "cold", sandpod.WithNoWait(), sandpod.WithTTL(time.Hour), sandpod.WithShutdownPolicy(sandpod.ShutdownRetain))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Delete(context.Background()) })
	if err := sb.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	info := sb.Info()
	if info.Phase != sandpod.PhaseRunning || info.ShutdownPolicy != sandpod.ShutdownRetain || info.ShutdownTime.IsZero() || info.Pool != "" {
		t.Errorf("created: %+v", info)
	}

	templates, err := c.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tpl := range templates {
		names = append(names, tpl.Name)
		if tpl.Name == "python" && !tpl.AutoResume {
			t.Errorf("python template: %+v", tpl)
		}
	}
	if !slices.Contains(names, "python") || !slices.Contains(names, "cold") {
		t.Errorf("templates: %v", names)
	}
	pools, err := c.WarmPools(ctx)
	if err != nil || len(pools) != 1 || pools[0].Template != "python" {
		t.Fatalf("pools: %+v, %v", pools, err)
	}
	pool, err := c.ScaleWarmPool(ctx, pools[0].Name, 3)
	if err != nil || pool.Replicas != 3 {
		t.Fatalf("scale: %+v, %v", pool, err)
	}
	if _, err := c.ScaleWarmPool(ctx, pools[0].Name, 2); err != nil {
		t.Fatal(err)
	}
	if p, err := c.WarmPool(ctx, pools[0].Name); err != nil || p.Replicas != 2 {
		t.Errorf("get pool: %+v, %v", p, err)
	}
	if _, err := c.WarmPool(ctx, "no-such-pool"); !errors.Is(err, sandpod.ErrNotFound) {
		t.Errorf("missing pool: %v", err)
	}
}
