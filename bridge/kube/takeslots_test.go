package kube

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestTakeSlots(t *testing.T) {
	s := newTakeSlots()
	ctx := context.Background()
	for i := 0; i < maxTakesInFlight; i++ {
		if err := s.acquire(ctx); err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
	}
	// Full: the next one waits, and gives up with its context.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire on full slots: %v, want the context's deadline", err)
	}
	// A release lets a waiting one in.
	got := make(chan error, 1)
	go func() { got <- s.acquire(ctx) }()
	select {
	case err := <-got:
		t.Fatalf("acquired on full slots: %v", err)
	case <-time.After(time.Second): // >10x a loaded machine's scheduling delay
	}
	s.release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a release did not let the waiting take in")
	}
	// No slots (a Backend made without New): no bound.
	var none takeSlots
	if err := none.acquire(short); err != nil {
		t.Fatalf("nil slots: %v", err)
	}
	none.release()
}
