package cli

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineWriter collects writes and signals each one.
type lineWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func newLineWriter() *lineWriter { return &lineWriter{wrote: make(chan struct{}, 100)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestProgressQuietForShortWaits(t *testing.T) {
	for _, tty := range []bool{true, false} {
		w := newLineWriter()
		p := newProgress(w, tty, "claiming")
		p.delay = time.Hour
		p.begin()
		p.end(nil)
		if w.String() != "" {
			t.Errorf("tty=%v: a short wait printed %q", tty, w.String())
		}
	}
}

func TestProgressOnATerminalRewritesOneLine(t *testing.T) {
	w := newLineWriter()
	p := newProgress(w, true, "claiming a sandbox of python")
	p.delay, p.every = time.Millisecond, time.Millisecond
	p.detail = func() string { return "3 files" }
	p.begin()
	<-w.wrote
	<-w.wrote
	p.end(nil)
	out := w.String()
	if !strings.HasPrefix(out, "\r\033[Kclaiming a sandbox of python: 0s, 3 files") || !strings.HasSuffix(out, "\r\033[K") || strings.Contains(out, "\n") {
		t.Fatalf("terminal progress: %q", out)
	}
}

func TestProgressInALogPrintsLines(t *testing.T) {
	w := newLineWriter()
	p := newProgress(w, false, "resuming sb")
	p.delay = time.Millisecond
	p.begin()
	<-w.wrote
	p.end(errors.New("boom"))
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "] resuming sb: 0s") || !strings.Contains(lines[1], "] resuming sb: failed after") {
		t.Fatalf("log progress: %q", w.String())
	}
	if lines[0][0] != '[' || lines[0][9] != ']' {
		t.Fatalf("not stamped [hh:mm:ss]: %q", lines[0])
	}
}
