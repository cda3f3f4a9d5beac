package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// progressDelay is how long a wait stays silent: a warm claim or a quick
// call never shows a line (as the Python client's wait bar).
const progressDelay = time.Second

// progress says what a wait is doing on stderr once it has lasted
// progressDelay: on a terminal one line rewritten in place and cleared at
// the end; elsewhere (--progress into a file or pipe) a line at the start,
// one every `every`, and one at the end, each stamped as hack/local's
// build progress is.
type progress struct {
	w      io.Writer
	tty    bool
	what   string
	detail func() string // extra words (bytes copied); may be nil
	delay  time.Duration
	every  time.Duration
	now    func() time.Time

	mu      sync.Mutex
	start   time.Time
	shown   bool
	stop    chan struct{}
	stopped chan struct{}
}

func newProgress(w io.Writer, tty bool, what string) *progress {
	p := &progress{w: w, tty: tty, what: what, delay: progressDelay, now: time.Now}
	p.every = time.Second
	if !tty {
		p.every = 10 * time.Second
	}
	return p
}

// begin starts the clock and the ticker.
func (p *progress) begin() {
	p.start = p.now()
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go p.loop()
}

func (p *progress) loop() {
	defer close(p.stopped)
	t := time.NewTimer(p.delay)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.tick()
		t.Reset(p.every)
	}
}

func (p *progress) line() string {
	s := fmt.Sprintf("%s: %s", p.what, p.now().Sub(p.start).Truncate(time.Second))
	if p.detail != nil {
		if d := p.detail(); d != "" {
			s += ", " + d
		}
	}
	return s
}

func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		// \r and erase-line: one line, rewritten in place.
		fmt.Fprintf(p.w, "\r\033[K%s", p.line())
	} else {
		fmt.Fprintf(p.w, "[%s] %s\n", p.now().Format(time.TimeOnly), p.line())
	}
	p.shown = true
}

// end stops the ticker; a terminal gets its line back, a log gets the
// outcome.
func (p *progress) end(err error) {
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
		return
	}
	took := p.now().Sub(p.start).Round(100 * time.Millisecond)
	if err != nil {
		fmt.Fprintf(p.w, "[%s] %s: failed after %s\n", p.now().Format(time.TimeOnly), p.what, took)
		return
	}
	fmt.Fprintf(p.w, "[%s] %s: done in %s\n", p.now().Format(time.TimeOnly), p.what, took)
}

// during runs fn with a progress line (when progress is on) saying what.
func (a *app) during(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	return a.duringWith(ctx, what, nil, fn)
}

func (a *app) duringWith(ctx context.Context, what string, detail func() string, fn func(ctx context.Context) error) error {
	if !a.progressOn() {
		return fn(ctx)
	}
	p := newProgress(a.err, isTerminal(a.err), what)
	p.detail = detail
	p.begin()
	err := fn(ctx)
	p.end(err)
	return err
}
