package goclient_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/tests/testserver"
)

// wellUnderAMinute bounds a call to a server that is not there: the rule is
// "seconds, not the RetryPolicy's minute", not a tight timing.
const wellUnderAMinute = 30 * time.Second

// closedAddr is a port on 127.0.0.1 that nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestNoServerFailsFastNamingTheAddress: a client whose server is not
// running fails every kind of call with ErrUnavailable in seconds, saying
// where it looked, with the default RetryPolicy (a minute of retries).
func TestNoServerFailsFastNamingTheAddress(t *testing.T) {
	addr := closedAddr(t)
	c, err := sandpod.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testContext(t)
	ghost := c.Sandbox("ghost")
	calls := map[string]func() error{
		"get":   func() error { _, err := c.Get(ctx, "x"); return err },
		"claim": func() error { _, err := c.Claim(ctx, "python"); return err },
		"list":  func() error { _, err := c.ListAll(ctx); return err },
		"run":   func() error { _, err := ghost.Run(ctx, "true"); return err },
		"read":  func() error { _, err := ghost.Files().ReadFile(ctx, "f"); return err },
		"write": func() error { _, err := ghost.Files().WriteFile(ctx, "f", []byte("x")); return err },
		"watch": func() error {
			for _, err := range c.Watch(ctx) {
				return err
			}
			return nil
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			began := time.Now()
			err := call()
			if took := time.Since(began); took > wellUnderAMinute {
				t.Errorf("took %v", took)
			}
			if !errors.Is(err, sandpod.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			msg := err.Error()
			for _, want := range []string{"no sandpod server at " + addr, "make run", "connection refused"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q does not say %q", msg, want)
				}
			}
		})
	}
}

// TestConnectedClientRidesOutARestart: once a client has reached its
// server, a call made while the server is down for longer than the
// first-connection wait is retried until it is back.
func TestConnectedClientRidesOutARestart(t *testing.T) {
	srv := startServer(t, testserver.Options{})
	ctx := testContext(t)
	c := dial(t, srv.Addr())
	sb := claim(t, c, "python")
	srv.Stop(t)
	got := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, sb.Name())
		got <- err
	}()
	time.Sleep(2 * sandpod.DefaultConnectTimeout)
	srv.StartAgain(t)
	if err := <-got; err != nil {
		t.Fatalf("get across the restart: %v", err)
	}
	if res, err := sb.Run(ctx, "echo back"); err != nil || string(res.Stdout) != "back\n" {
		t.Fatalf("run after the restart: %v", err)
	}
}

// TestConnectTimeoutOff: WithConnectTimeout(0) makes a first call retry
// like any other, until its context ends.
func TestConnectTimeoutOff(t *testing.T) {
	c, err := sandpod.Dial(context.Background(), closedAddr(t), sandpod.WithConnectTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = c.Get(ctx, "x")
	if !errors.Is(err, sandpod.ErrTimeout) || strings.Contains(err.Error(), "no sandpod server") {
		t.Fatalf("err = %v, want the context's deadline after retries", err)
	}
}
