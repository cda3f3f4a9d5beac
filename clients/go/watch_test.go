package sandpod

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
)

func TestWatchRetriesBeforeFirstEventAndEndsWithContext(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("watch", codes.Unavailable, codes.Unavailable)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var names []string
	for ev, err := range c.Watch(ctx) {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if ev.Type != EventAdded || ev.Sandbox.Phase != PhaseRunning {
			t.Errorf("event = %+v", ev)
		}
		names = append(names, ev.Sandbox.Name)
		if len(names) == 2 {
			cancel() // the loop must then end without an error
		}
	}
	if len(names) != 2 || f.count("watch") != 3 {
		t.Errorf("names = %v, watch calls = %d", names, f.count("watch"))
	}
}

func TestWatchYieldsPermanentError(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("watch", codes.PermissionDenied)
	for _, err := range c.Watch(context.Background()) {
		if !errors.Is(err, ErrPermissionDenied) {
			t.Fatalf("err = %v", err)
		}
	}
}
