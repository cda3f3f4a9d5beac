package agent

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestIdleTrimFiresOnceIdleAndNotBefore(t *testing.T) {
	var n atomic.Int32
	fired := make(chan struct{}, 8)
	tr := newIdleTrim(time.Millisecond, func() { n.Add(1); fired <- struct{}{} })
	if tr.timer != nil {
		t.Fatal("a timer before any call: an idle agent would wake for it")
	}
	// Two calls overlap: the first one's end arms nothing.
	tr.begin()
	tr.begin()
	tr.end()
	time.Sleep(50 * time.Millisecond)
	if n.Load() != 0 {
		t.Fatal("trimmed while a call was in flight")
	}
	tr.end()
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("not trimmed after the last call ended")
	}
	// Then nothing more until the next call.
	time.Sleep(50 * time.Millisecond)
	if n.Load() != 1 {
		t.Fatalf("trimmed %d times after one idle period", n.Load())
	}
	tr.begin()
	tr.end()
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("not trimmed after the next call")
	}
}

func TestIdleTrimSkipsAFireThatFindsACallInFlight(t *testing.T) {
	var n atomic.Int32
	tr := newIdleTrim(time.Hour, func() { n.Add(1) })
	tr.begin()
	tr.fire() // as if the timer of an earlier call ran now
	if n.Load() != 0 {
		t.Fatal("trimmed during a call")
	}
	tr.end()
	tr.fire()
	if n.Load() != 1 {
		t.Fatal("not trimmed when idle")
	}
	tr.timer.Stop()
}
