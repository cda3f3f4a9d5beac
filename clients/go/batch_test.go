package sandpod

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
)

func TestClaimManyIsAllOrNothing(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	got, err := c.ClaimMany(context.Background(), "python", 5, WithConcurrency(2), WithRequestID("batch"))
	if err != nil || len(got) != 5 {
		t.Fatalf("ClaimMany = %d, %v", len(got), err)
	}
	seen := map[string]bool{}
	for _, id := range f.requestIDs {
		seen[id] = true
	}
	for _, want := range []string{"batch-0", "batch-1", "batch-2", "batch-3", "batch-4"} {
		if !seen[want] {
			t.Errorf("request id %q not sent; sent %q", want, f.requestIDs)
		}
	}

	// A claim that fails for good: the others are deleted.
	f.failNext("claim", codes.InvalidArgument)
	before := f.count("delete")
	got, err = c.ClaimMany(context.Background(), "python", 4, WithConcurrency(1))
	if !errors.Is(err, ErrInvalidArgument) || got != nil {
		t.Fatalf("ClaimMany = %v, %v", got, err)
	}
	// With one worker, the first claim fails and nothing else is claimed.
	if n := f.count("delete") - before; n != 0 {
		t.Errorf("deleted %d, want 0", n)
	}
	// Two claims succeed, the third fails: the two are deleted.
	f.failNext("claim", codes.OK, codes.OK, codes.NotFound)
	before = f.count("delete")
	if _, err := c.ClaimMany(context.Background(), "python", 4, WithConcurrency(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ClaimMany: %v", err)
	}
	if n := f.count("delete") - before; n != 2 {
		t.Errorf("deleted %d, want 2", n)
	}
	if got, err := c.ClaimMany(context.Background(), "python", 0); err != nil || len(got) != 0 {
		t.Errorf("n = 0: %v %v", got, err)
	}
}
