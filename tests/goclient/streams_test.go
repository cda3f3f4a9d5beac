package goclient_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"google.golang.org/grpc"
)

// countingReader yields n zero bytes and closes reached once it has
// yielded at least mark of them.
type countingReader struct {
	n, mark int64
	read    atomic.Int64
	reached chan struct{}
}

func (r *countingReader) Read(p []byte) (int, error) {
	left := r.n - r.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), left))
	clear(p[:k])
	if before := r.read.Add(int64(k)) - int64(k); before < r.mark && before+int64(k) >= r.mark {
		close(r.reached)
	}
	return k, nil
}

// 64 MiB of stdin for a command that reads none: the copy blocks within
// the server's window, and Kill (and Signal) still end the command at
// once, with the signal's status. The sandbox serves calls afterwards.
func TestSignalWhileStdinWaitsForACommandThatReadsNone(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		p, err := sb.Start(ctx, "sleep 1000")
		if err != nil {
			t.Fatal(err)
		}
		in := &countingReader{n: 64 << 20, mark: 2 << 20, reached: make(chan struct{})}
		copied := make(chan error, 1)
		go func() {
			_, err := io.Copy(p.Stdin(), in)
			copied <- err
		}()
		<-in.reached // 2 MiB taken from the source, the rest still to go
		if err := p.Signal(sig); err != nil {
			t.Fatalf("signal %v: %v", sig, err)
		}
		res, err := p.Wait()
		if err != nil || res.Signal != int(sig) || res.ExitCode != -1 {
			t.Fatalf("%v: wait = %+v, %v; want ended by the signal", sig, res, err)
		}
		if err := <-copied; !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("%v: the copy returned %v, want os.ErrProcessDone", sig, err)
		}
		if got := in.read.Load(); got >= in.n {
			t.Errorf("%v: all %d bytes were taken although the command read none", sig, got)
		}
	}
	if res, err := sb.Run(ctx, "echo still here"); err != nil || string(res.Stdout) != "still here\n" {
		t.Fatalf("run after the signals: %+v, %v", res, err)
	}
}

// Files.List reads a directory of 40,000 entries completely, page by
// page, in name order.
func TestListFortyThousandEntries(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")
	const n = 40000
	if _, err := sb.Run(ctx, fmt.Sprintf("mkdir big && cd big && seq -f 'e%%05g' 0 %d | xargs touch", n-1), sandpod.WithCheck()); err != nil {
		t.Fatal(err)
	}
	entries, err := sb.Files().List(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n {
		t.Fatalf("listed %d entries, want %d", len(entries), n)
	}
	for i, e := range entries {
		if want := fmt.Sprintf("e%05d", i); e.Name != want || e.Path != "big/"+want {
			t.Fatalf("entry %d is %q (%q), want %q", i, e.Name, e.Path, want)
		}
	}
}

// A file call answered RESOURCE_EXHAUSTED is not retried: here a page of
// ListFiles over the receive limit this client was given, as a directory
// listed in one message fails against gRPC's default limit of 4 MiB.
func TestResourceExhaustedFileCallIsNotRetried(t *testing.T) {
	ctx := testContext(t)
	var retries atomic.Int32
	policy := patient
	policy.OnRetry = func(op string, err error, _ time.Duration) {
		retries.Add(1)
		t.Logf("retry of %s after %v", op, err)
	}
	c := dial(t, serverAddr, sandpod.WithRetryPolicy(policy),
		sandpod.WithDialOptions(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4<<10))))
	sb := claim(t, c, "python")
	if _, err := sb.Run(ctx, "mkdir many && cd many && seq 1 500 | xargs touch", sandpod.WithCheck()); err != nil {
		t.Fatal(err)
	}
	_, err := sb.Files().List(ctx, "many")
	if !errors.Is(err, sandpod.ErrResourceExhausted) || !strings.Contains(err.Error(), "larger than max") {
		t.Fatalf("list: %v, want ErrResourceExhausted saying the message is larger than the limit", err)
	}
	if n := retries.Load(); n != 0 {
		t.Fatalf("the list was retried %d times", n)
	}
}
