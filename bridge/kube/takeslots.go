package kube

import "context"

// maxTakesInFlight bounds the warm takes (one patch each, retried on a
// refusal) this process has at the API server at once. Calls beyond it
// wait their turn holding only their gRPC handler: when claims arrive
// faster than the API server answers (200 claims/s in the kwok bench on a
// busy machine: 450 calls in flight, 1,500 goroutines), each call in flight
// also held an HTTP/2 stream, its request and a decoded answer, about 40
// KiB of stack and heap, and that pile-up set the bridge's peak RSS. The
// API server serves them no faster for having them all at once; 64
// outstanding patches keep even a large one busy.
const maxTakesInFlight = 64

// takeSlots is a counting semaphore of maxTakesInFlight (nil: no bound).
type takeSlots chan struct{}

func newTakeSlots() takeSlots { return make(takeSlots, maxTakesInFlight) }

// acquire waits for a slot, or for ctx.
func (s takeSlots) acquire(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s takeSlots) release() {
	if s != nil {
		<-s
	}
}
