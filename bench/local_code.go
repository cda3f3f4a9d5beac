package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// codeRuns measures run_code: the first call in sandboxes that never ran
// code (it starts the default context: a python3 and the executor), then
// `1+1` round trips in the warm default context of one sandbox.
func (l *localSuite) codeRuns(ctx context.Context, fresh []string, box string) error {
	var first []time.Duration
	for _, sb := range fresh {
		d, err := l.runCode(ctx, sb, "1+1")
		if err != nil {
			return err
		}
		first = append(first, d)
	}
	l.codeFirst.addRun(ms(first))
	for i := 0; i < 10; i++ { // warm-up
		if _, err := l.runCode(ctx, box, "1+1"); err != nil {
			return err
		}
	}
	var rt []time.Duration
	for i := 0; i < l.p.Execs; i++ {
		d, err := l.runCode(ctx, box, "1+1")
		if err != nil {
			return err
		}
		rt = append(rt, d)
	}
	l.code1.addRun(ms(rt))
	return nil
}

// runCode runs a cell in the default context and returns the time from
// the call to its done message; it checks the value is 2.
func (l *localSuite) runCode(ctx context.Context, box, code string) (time.Duration, error) {
	t0 := time.Now()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := l.api.RunCode(cctx, &sandpodv1.RunCodeRequest{Sandbox: box, Code: code})
	if err != nil {
		return 0, fmt.Errorf("run_code: %w", err)
	}
	value := ""
	for {
		msg, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return 0, errors.New("run_code: no done message")
		}
		if err != nil {
			return 0, fmt.Errorf("run_code: %w", err)
		}
		if r := msg.GetResult(); r.GetIsMainResult() {
			value = string(r.GetData()["text/plain"])
		}
		if e := msg.GetError(); e != nil {
			return 0, fmt.Errorf("run_code %q: %s: %s", code, e.GetName(), e.GetValue())
		}
		if msg.GetDone() != nil {
			d := time.Since(t0)
			if value != "2" {
				return 0, fmt.Errorf("run_code %q returned %q, want 2", code, value)
			}
			return d, nil
		}
	}
}

// codeRows are the run_code rows of the local table.
func (l *localSuite) codeRows(lat func(string, *series, string, func(p50, p99 float64) bool, string) Row) []Row {
	return []Row{
		lat("run_code round trip `1+1`, warm context", &l.code1, "p50 ≤ 3 ms", func(p50, _ float64) bool { return p50 <= 3 },
			"RunCode → done, default context already running, one call at a time"),
		lat("first run_code in a new sandbox", &l.codeFirst, "", nil,
			"warm-claimed sandbox, first RunCode `1+1`: starts python3 and the executor (see docs/performance.md)"),
	}
}
