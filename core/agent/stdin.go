package agent

import (
	"io"
	"sync"
	"sync/atomic"
)

// StdinWindow is how many stdin bytes an exec holds for a command that has
// not read them yet. It is sent to the client in ExecStarted.stdin_window;
// a client that keeps its unacknowledged stdin within it never has a
// message wait behind stdin (see stdinFeed).
// It must be at least 64 KiB: the protocol lets a client send that much
// before it knows the window.
const StdinWindow = 4 << 20

// pipeWrite is the most written to a command's stdin pipe at once: a
// pipe's default capacity, so that acknowledgements follow what the
// command reads rather than whole messages.
const pipeWrite = 64 << 10

// stdinFeed stands between an exec stream and the command's stdin pipe, so
// that the goroutine reading the stream never blocks on the pipe. Were it
// to write into the pipe itself, a command that does not read its stdin
// would stop it, and with it gRPC flow control would stop the whole stream:
// a signal sent after the stdin could never be read.
//
// So the reader queues stdin here and goes on reading; a writer goroutine
// (run) moves the queue into the pipe as fast as the command reads, and
// counts what it moved (acked), which the client is told (stdin_acked).
// Memory stays bounded: the queue holds at most the window (or one message
// when empty). A client that keeps within the window never finds it full.
// One that does not is held back by push, which waits for room: the stream
// is then paced by gRPC flow control, as it was before the window existed.
type stdinFeed struct {
	window int64

	mu      sync.Mutex
	cond    sync.Cond // the queue changed: data, room, closed or dropped
	queue   [][]byte
	queued  int64 // bytes in queue, including what the writer is writing
	closed  bool  // no more data: close the pipe once the queue is written
	dropped bool  // the exec ended: take nothing more

	acked  atomic.Int64  // bytes moved to the pipe, or dropped after it broke
	notify chan struct{} // capacity 1: acked grew
}

func newStdinFeed(window int64) *stdinFeed {
	f := &stdinFeed{window: window, notify: make(chan struct{}, 1)}
	f.cond.L = &f.mu
	return f
}

// push queues b. It waits only while the queue is full, which a client
// within the window never sees, and never once the feed was dropped.
func (f *stdinFeed) push(b []byte) {
	if len(b) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.dropped && f.queued > 0 && f.queued+int64(len(b)) > f.window {
		f.cond.Wait()
	}
	switch {
	case f.dropped:
		return
	case f.closed:
		// Stdin after close_stdin goes nowhere, as a write to a closed
		// pipe would; it is still counted, like any dropped stdin.
		f.ack(len(b))
		return
	}
	f.queue = append(f.queue, b)
	f.queued += int64(len(b))
	f.cond.Broadcast()
}

// close ends the input: the pipe is closed once what is queued is written.
func (f *stdinFeed) close() {
	f.mu.Lock()
	f.closed = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// drop ends the feed when the exec ends: a push waiting for room returns,
// and the writer stops.
func (f *stdinFeed) drop() {
	f.mu.Lock()
	f.dropped, f.closed = true, true
	f.queue = nil
	f.cond.Broadcast()
	f.mu.Unlock()
}

// next returns the next queued chunk, waiting for one; false when the
// input has ended.
func (f *stdinFeed) next() ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.queue) == 0 && !f.closed {
		f.cond.Wait()
	}
	if len(f.queue) == 0 || f.dropped {
		return nil, false
	}
	b := f.queue[0]
	f.queue[0] = nil
	f.queue = f.queue[1:]
	return b, true
}

// moved records n bytes written to the pipe (or dropped): room in the
// queue, and an acknowledgement to send.
func (f *stdinFeed) moved(n int) {
	f.mu.Lock()
	f.queued -= int64(n)
	f.cond.Broadcast()
	f.mu.Unlock()
	f.ack(n)
}

func (f *stdinFeed) ack(n int) {
	f.acked.Add(int64(n))
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// run writes the queue into w until the input ends, then closes w. After a
// failed write (the command closed its stdin, or ended) the rest is
// dropped, still counted, so that a client waiting for room goes on.
func (f *stdinFeed) run(w io.WriteCloser) {
	defer w.Close()
	broken := false
	for {
		b, ok := f.next()
		if !ok {
			return
		}
		for len(b) > 0 {
			n := min(len(b), pipeWrite)
			if !broken {
				if _, err := w.Write(b[:n]); err != nil {
					broken = true
				}
			}
			b = b[n:]
			f.moved(n)
		}
	}
}

// sendAcks sends the acknowledged count each time it grows, until stop is
// closed or a send fails. It is its own goroutine so that neither the
// writer nor the stream reader waits on the client reading its output.
func (f *stdinFeed) sendAcks(stop <-chan struct{}, send func(acked int64) error) {
	var last int64
	for {
		select {
		case <-stop:
			return
		case <-f.notify:
		}
		if n := f.acked.Load(); n != last {
			if send(n) != nil {
				return
			}
			last = n
		}
	}
}
