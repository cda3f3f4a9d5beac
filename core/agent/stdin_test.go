package agent

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"
)

// blockingWriter takes nothing until released, like the pipe of a command
// that never reads its stdin; then it fails, as a pipe whose reader died.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	closed  bool
}

func (w *blockingWriter) Write(b []byte) (int, error) {
	<-w.release
	return 0, errors.New("broken pipe")
}

func (w *blockingWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

// recordingWriter takes everything.
type recordingWriter struct {
	mu     sync.Mutex
	got    bytes.Buffer
	closed bool
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(b)
}

func (w *recordingWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Within the window, push never waits, whatever the pipe does: the stream
// reader is free to see the next message (a signal).
func TestStdinFeedPushWithinTheWindowNeverWaits(t *testing.T) {
	f := newStdinFeed(1 << 20)
	w := &blockingWriter{release: make(chan struct{})}
	go f.run(w)
	done := make(chan struct{})
	go func() {
		for range 4 {
			f.push(make([]byte, 256<<10))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("push waited although the queue had room")
	}
	// Past the window it waits, until the pipe breaks and the queue is
	// dropped (and counted).
	pushed := make(chan struct{})
	go func() { f.push([]byte("x")); close(pushed) }()
	select {
	case <-pushed:
		t.Fatal("push past the window did not wait")
	case <-time.After(time.Second): // a push that does not wait returns at once: 1 s is >10x a loaded machine's scheduling delay
	}
	close(w.release)
	<-pushed
	f.close()
	waitFor(t, "everything acknowledged", func() bool { return f.acked.Load() == 1<<20+1 })
	waitFor(t, "the pipe closed", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.closed })
}

func TestStdinFeedWritesInOrderAndAcknowledges(t *testing.T) {
	f := newStdinFeed(1 << 20)
	w := &recordingWriter{}
	finished := make(chan struct{})
	go func() { f.run(w); close(finished) }()
	var acks []int64
	var mu sync.Mutex
	stop := make(chan struct{})
	acksDone := make(chan struct{})
	go func() {
		defer close(acksDone)
		f.sendAcks(stop, func(n int64) error { mu.Lock(); acks = append(acks, n); mu.Unlock(); return nil })
	}()
	var want bytes.Buffer
	for i := range 100 {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, 100<<10) // over pipeWrite: written in pieces
		want.Write(b)
		f.push(b)
	}
	f.close()
	f.push([]byte("after close")) // dropped, but counted
	<-finished
	if !bytes.Equal(w.got.Bytes(), want.Bytes()) {
		t.Fatalf("the pipe got %d bytes, not the %d pushed in order", w.got.Len(), want.Len())
	}
	total := int64(want.Len() + len("after close"))
	waitFor(t, "the last acknowledgement", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acks) > 0 && acks[len(acks)-1] == total
	})
	close(stop)
	<-acksDone
	for i := 1; i < len(acks); i++ {
		if acks[i] <= acks[i-1] {
			t.Fatalf("acknowledgements do not grow: %v", acks)
		}
	}
}

// When the exec ends, a push waiting for room returns at once.
func TestStdinFeedDropReleasesAWaitingPush(t *testing.T) {
	f := newStdinFeed(10)
	f.push(make([]byte, 10))
	pushed := make(chan struct{})
	go func() { f.push([]byte("x")); close(pushed) }()
	time.Sleep(10 * time.Millisecond)
	f.drop()
	select {
	case <-pushed:
	case <-time.After(30 * time.Second):
		t.Fatal("push still waits after drop")
	}
	if _, ok := f.next(); ok {
		t.Fatal("next returned data after drop")
	}
}
