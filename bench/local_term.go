package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// termWatch holds the figures of terminals and file watching.
type termWatch struct{ key, watch series }

// termWatchSamples is how many keystrokes and file events each run times.
const termWatchSamples = 100

// measureTermWatch times a keystroke through a terminal (client → bridge →
// agent → pty → a program that reads it and writes it back → client) and
// a file change reaching a watch.
func (l *localSuite) measureTermWatch(ctx context.Context, box string) error {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := l.api.Exec(tctx)
	if err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	// Raw mode without echo: what comes back is what cat read and wrote.
	start := &sandpodv1.ExecStart{Sandbox: box, Argv: []string{"/bin/sh", "-c", "stty raw -echo && echo ready && exec cat"},
		Pty: &sandpodv1.PtyRequest{Size: &sandpodv1.TerminalSize{Rows: 24, Cols: 80}}}
	if err := st.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: start}}); err != nil {
		return fmt.Errorf("terminal start: %w", err)
	}
	var screen bytes.Buffer
	await := func(want string) error {
		for !strings.Contains(screen.String(), want) {
			m, err := st.Recv()
			if err != nil {
				return fmt.Errorf("terminal: waiting for %q: %w", want, err)
			}
			screen.Write(m.GetStdout())
		}
		screen.Reset()
		return nil
	}
	if err := await("ready"); err != nil {
		return err
	}
	var keys []time.Duration
	for i := 0; i < termWatchSamples+5; i++ {
		k := string(rune('a' + i%26))
		t0 := time.Now()
		if err := st.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: []byte(k)}}); err != nil {
			return fmt.Errorf("terminal stdin: %w", err)
		}
		if err := await(k); err != nil {
			return err
		}
		if i >= 5 { // the first few warm up
			keys = append(keys, time.Since(t0))
		}
	}
	cancel()
	l.tw.key.addRun(ms(keys))

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	if _, err := l.api.MakeDir(wctx, &sandpodv1.MakeDirRequest{Sandbox: box, Path: "benchwatch", Parents: true}); err != nil {
		return fmt.Errorf("watch dir: %w", err)
	}
	w, err := l.api.WatchFiles(wctx, &sandpodv1.WatchFilesRequest{Sandbox: box, Path: "benchwatch"})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if _, err := w.Recv(); err != nil { // ready
		return fmt.Errorf("watch ready: %w", err)
	}
	var evs []time.Duration
	for i := 0; i < termWatchSamples; i++ {
		path := fmt.Sprintf("benchwatch/f%d", i)
		t0 := time.Now()
		if _, err := l.writeFile(wctx, box, path, []byte("x")); err != nil {
			return err
		}
		for seen := false; !seen; {
			m, err := w.Recv()
			if err != nil {
				return fmt.Errorf("watch: %w", err)
			}
			for _, e := range m.GetEvents() {
				seen = seen || e.GetPath() == path
			}
		}
		evs = append(evs, time.Since(t0))
	}
	l.tw.watch.addRun(ms(evs))
	return nil
}

func (l *localSuite) termWatchRows(lat func(string, *series, string, func(p50, p99 float64) bool, string) Row) []Row {
	return []Row{
		lat("terminal keystroke round trip", &l.tw.key, "", nil,
			"a byte sent to `cat` on a raw-mode pty until it comes back (client → bridge → agent → pty → cat and back)"),
		lat("file watch: write → event", &l.tw.watch, "", nil,
			"WriteFile of 1 byte started → its event received on an open WatchFiles (includes the write's own round trip)"),
	}
}
