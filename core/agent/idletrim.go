package agent

import (
	"sync"
	"time"
)

// trimDelay is how long the agent waits after its last call ends before it
// gives back the memory that call's work left (idleTrim).
const trimDelay = 10 * time.Second

// idleTrim returns the heap that a burst of work grew to the system once
// the agent has been idle for a while. Left to itself the Go runtime keeps
// it until a collection two minutes later and returns it slowly after that:
// measured, an agent that carried a 100 MB upload and download held 10 MiB
// more than an idle one two and a half minutes on (docs/performance.md).
// One timer, armed when the last call in flight ends and only then, so an
// agent with nothing to do never wakes for it; the engine's health checks
// (GetAgentInfo) and the health service do not arm it.
type idleTrim struct {
	mu       sync.Mutex
	inFlight int
	timer    *time.Timer
	delay    time.Duration
	free     func() // debug.FreeOSMemory
}

func newIdleTrim(delay time.Duration, free func()) *idleTrim {
	return &idleTrim{delay: delay, free: free}
}

// begin and end bracket one call.
func (t *idleTrim) begin() {
	t.mu.Lock()
	t.inFlight++
	t.mu.Unlock()
}

func (t *idleTrim) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if t.inFlight > 0 {
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(t.delay, t.fire)
		return
	}
	t.timer.Reset(t.delay)
}

func (t *idleTrim) fire() {
	t.mu.Lock()
	busy := t.inFlight > 0 // the next end arms it again
	t.mu.Unlock()
	if !busy {
		t.free()
	}
}
