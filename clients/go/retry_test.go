package sandpod

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIsTransient(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := map[string]struct {
		ctx        context.Context
		op         string
		code       codes.Code
		perAttempt bool
		want       bool
	}{
		"unavailable":                   {live, "get", codes.Unavailable, false, true},
		"aborted":                       {live, "get", codes.Aborted, false, true},
		"deadline without call timeout": {live, "get", codes.DeadlineExceeded, false, false},
		"deadline of one attempt":       {live, "get", codes.DeadlineExceeded, true, true},
		"deadline of the whole call":    {done, "get", codes.DeadlineExceeded, true, false},
		"unavailable after cancel":      {done, "get", codes.Unavailable, false, false},
		"not found":                     {live, "get", codes.NotFound, false, false},
		"invalid argument":              {live, "get", codes.InvalidArgument, true, false},
		"internal":                      {live, "get", codes.Internal, false, false},
		"failed precondition":           {live, "get", codes.FailedPrecondition, false, false},
		// RESOURCE_EXHAUSTED is back-pressure for claims and creates only;
		// from an agent or anything else it is a limit that stays.
		"exhausted claim":              {live, "claim", codes.ResourceExhausted, false, true},
		"exhausted create":             {live, "create", codes.ResourceExhausted, false, true},
		"exhausted claim after cancel": {done, "claim", codes.ResourceExhausted, false, false},
		"exhausted files.list":         {live, "files.list", codes.ResourceExhausted, false, false},
		"exhausted files.read":         {live, "files.read", codes.ResourceExhausted, false, false},
		"exhausted files.stat":         {live, "files.stat", codes.ResourceExhausted, false, false},
		"exhausted files.mkdir":        {live, "files.mkdir", codes.ResourceExhausted, false, false},
		"exhausted files.remove":       {live, "files.remove", codes.ResourceExhausted, false, false},
		"exhausted scale warm pool":    {live, "scale warm pool", codes.ResourceExhausted, false, false},
		"exhausted watch":              {live, "watch", codes.ResourceExhausted, false, false},
		"exhausted get":                {live, "get", codes.ResourceExhausted, false, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := isTransient(tc.ctx, tc.op, status.Error(tc.code, "x"), tc.perAttempt); got != tc.want {
				t.Errorf("isTransient = %v, want %v", got, tc.want)
			}
		})
	}
}

// A file call that an agent answers RESOURCE_EXHAUSTED fails at once, with
// the agent's message, after one attempt; UNAVAILABLE is still retried.
func TestFileCallsDoNotRetryResourceExhausted(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	files := c.Sandbox("python-1").Files()
	ctx := context.Background()

	f.failNext("list files", codes.ResourceExhausted)
	_, err := files.List(ctx, "d")
	if !errors.Is(err, ErrResourceExhausted) || !strings.Contains(err.Error(), "injected ResourceExhausted") {
		t.Fatalf("list: %v, want ErrResourceExhausted with the server's message", err)
	}
	if n := f.count("list files"); n != 1 {
		t.Errorf("list attempts = %d, want 1", n)
	}

	f.failNext("stat", codes.ResourceExhausted)
	if _, err := files.Stat(ctx, "x"); !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("stat: %v, want ErrResourceExhausted", err)
	}
	if n := f.count("stat"); n != 1 {
		t.Errorf("stat attempts = %d, want 1", n)
	}

	f.failNext("stat", codes.Unavailable, codes.Unavailable)
	if _, err := files.Stat(ctx, "x"); err != nil {
		t.Fatalf("stat after two UNAVAILABLE: %v", err)
	}
	if n := f.count("stat"); n != 4 {
		t.Errorf("stat attempts = %d, want 4 (1 + 3)", n)
	}
}

func TestClaimRetriesWithOneRequestID(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("claim", codes.Unavailable, codes.ResourceExhausted, codes.Aborted)
	sb, err := c.Claim(context.Background(), "python")
	if err != nil {
		t.Fatal(err)
	}
	if sb.Name() != "python-1" || !sb.Warm() || sb.Info().Phase != PhaseRunning {
		t.Errorf("sandbox = %v warm=%v info=%+v", sb, sb.Warm(), sb.Info())
	}
	if len(f.requestIDs) != 4 {
		t.Fatalf("attempts = %d, want 4", len(f.requestIDs))
	}
	for _, id := range f.requestIDs {
		if id == "" || id != f.requestIDs[0] {
			t.Fatalf("request ids differ between retries: %q", f.requestIDs)
		}
	}
	// A second logical call gets a new id.
	if _, err := c.Claim(context.Background(), "python"); err != nil {
		t.Fatal(err)
	}
	if f.requestIDs[4] == f.requestIDs[0] {
		t.Errorf("two claims share request id %q", f.requestIDs[0])
	}
}

func TestRetryStopsOnPermanentError(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("claim", codes.Unavailable, codes.InvalidArgument, codes.Unavailable)
	_, err := c.Claim(context.Background(), "python")
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrInvalidArgument", err)
	}
	if n := f.count("claim"); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
}

func TestRetryGivesUpAfterMaxAttempts(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("get", codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable)
	_, err := c.Get(context.Background(), "python-1")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := f.count("get"); n != 5 {
		t.Errorf("attempts = %d, want 5 (MaxAttempts)", n)
	}
}

func TestNoRetry(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f, WithRetryPolicy(NoRetry))
	f.failNext("get", codes.Unavailable)
	if _, err := c.Get(context.Background(), "python-1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("get"); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

func TestRetryEndsWithTheContext(t *testing.T) {
	f := newFakeServer()
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel while the client waits to retry (not while the attempt is in
	// flight, which would make the attempt itself end with the context).
	slow := RetryPolicy{InitialInterval: time.Hour, MaxInterval: time.Hour, MaxElapsedTime: -1,
		OnRetry: func(string, error, time.Duration) { cancel() }}
	c := startFake(t, f, WithRetryPolicy(slow))
	f.failNext("get", codes.Unavailable)
	_, err := c.Get(ctx, "python-1")
	if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if !strings.Contains(err.Error(), "last error: injected Unavailable") {
		t.Errorf("err = %v, want the last attempt's error in it", err)
	}
	if n := f.count("get"); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

func TestCallTimeoutRetriesASlowAttempt(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f, WithCallTimeout(50*time.Millisecond))
	// The first Suspend hangs until its attempt times out; the second
	// answers at once.
	if err := c.Sandbox("python-1").Suspend(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.count("suspend"); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
}

func TestDeleteRetryAfterLostAnswerIsSuccess(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("delete", codes.Unavailable, codes.NotFound)
	if err := c.Delete(context.Background(), "python-1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	// A NotFound on the first attempt is an answer.
	f.failNext("delete", codes.NotFound)
	if err := c.Delete(context.Background(), "python-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of a missing sandbox: %v", err)
	}
}

func TestTokenIsSent(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f, WithToken("s3cret"))
	if _, err := c.Get(context.Background(), "python-1"); err != nil {
		t.Fatal(err)
	}
	if len(f.auth) != 1 || f.auth[0] != "Bearer s3cret" {
		t.Errorf("authorization = %q", f.auth)
	}
}

func TestClosedClient(t *testing.T) {
	c, err := Dial(context.Background(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), "x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
}
