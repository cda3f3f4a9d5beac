package preflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func intOrPort(p int32) intstr.IntOrString { return intstr.FromInt32(p) }

// ProbeDNS is the DNS probe pod's work: resolve name with the pod's resolver
// and print one "address A" line per address, or "error E".
func ProbeDNS(ctx context.Context, w io.Writer, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var r net.Resolver
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		fmt.Fprintln(w, "error", err)
		return err
	}
	for _, a := range addrs {
		fmt.Fprintln(w, "address", a)
	}
	return nil
}

// ProbeListen is the server probe pod's work: accept connections on addr
// and close them, until ctx ends.
func ProbeListen(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); _ = l.Close() }()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		_ = c.Close()
	}
}

// ErrNotAsExpected: the connection did what the probe did not expect
// within its time.
var ErrNotAsExpected = errors.New("not as expected")

// ProbeConnect is a client probe pod's work: connect to addr once a second
// until the outcome is expect ("open": a connection is made; "blocked": two
// attempts in a row fail), for at most within.
func ProbeConnect(ctx context.Context, w io.Writer, addr, expect string, within time.Duration) error {
	if expect != "open" && expect != "blocked" {
		return fmt.Errorf("--expect %q: want open or blocked", expect)
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	failed := 0
	for attempt := 1; ; attempt++ {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			failed = 0
			if expect == "open" {
				fmt.Fprintf(w, "open after %d attempts\n", attempt)
				return nil
			}
		} else if ctx.Err() == nil {
			failed++
			if expect == "blocked" && failed >= 2 {
				fmt.Fprintf(w, "blocked after %d attempts: %v\n", attempt, err)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(w, "not %s within %s (%d attempts, last: %v)\n", expect, within, attempt, err)
			return ErrNotAsExpected
		case <-time.After(time.Second):
		}
	}
}
