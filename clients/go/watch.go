package sandpod

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	"github.com/cenkalti/backoff/v4"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errServerEndedWatch is a watch stream the server closed: it is treated
// like a broken connection.
var errServerEndedWatch = status.Error(codes.Unavailable, "the server ended the watch")

// EventType says what happened to a sandbox.
type EventType string

// The event types of Watch.
const (
	EventAdded    EventType = "Added"
	EventModified EventType = "Modified"
	EventDeleted  EventType = "Deleted"
)

// Event is one change seen by Watch.
type Event struct {
	Type EventType
	// Sandbox is the sandbox's state after the change (before it, for
	// EventDeleted).
	Sandbox Info
}

func eventTypeFromProto(t pb.WatchSandboxesResponse_EventType) EventType {
	switch t {
	case pb.WatchSandboxesResponse_EVENT_TYPE_ADDED:
		return EventAdded
	case pb.WatchSandboxesResponse_EVENT_TYPE_DELETED:
		return EventDeleted
	}
	return EventModified
}

// Watch streams changes to the namespace's sandboxes (filtered by
// WithLabelSelector, WithPoolMembers; WithInitialEvents first sends the
// ones that exist). The iteration ends without an error when ctx ends or
// the loop breaks. Any other failure is yielded once and ends it; call
// Watch again with WithInitialEvents to resynchronise. A server that is
// unavailable before the first event is retried per the RetryPolicy.
//
//	for ev, err := range client.Watch(ctx) {
//		if err != nil { return err }
//		fmt.Println(ev.Type, ev.Sandbox.Name, ev.Sandbox.Phase)
//	}
func (c *Client) Watch(ctx context.Context, opts ...ListOption) iter.Seq2[Event, error] {
	cfg := newListConfig(opts)
	req := &pb.WatchSandboxesRequest{
		Namespace:          c.ns,
		LabelSelector:      cfg.selector,
		SendInitialEvents:  cfg.initialEvents,
		IncludePoolMembers: cfg.poolMembers,
	}
	return func(yield func(Event, error) bool) {
		if err := c.check(); err != nil {
			yield(Event{}, err)
			return
		}
		if err := c.awaitServer(ctx, "watch"); err != nil {
			yield(Event{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		bo := c.cfg.retry.backOff(ctx)
		received := false
		for {
			err := c.watchOnce(ctx, req, func(ev Event) bool {
				received = true
				return yield(ev, nil)
			})
			if err == nil || ctx.Err() != nil {
				return // the caller stopped, or ctx ended
			}
			if !received && isTransient(ctx, "watch", err, false) {
				if d := bo.NextBackOff(); d != backoff.Stop {
					t := time.NewTimer(d)
					select {
					case <-ctx.Done():
						t.Stop()
						return
					case <-t.C:
					}
					continue
				}
			}
			yield(Event{}, wrapError("watch", err))
			return
		}
	}
}

// watchOnce runs one watch stream until it fails (error) or fn returns
// false (nil).
func (c *Client) watchOnce(ctx context.Context, req *pb.WatchSandboxesRequest, fn func(Event) bool) error {
	stream, err := c.rpc.WatchSandboxes(ctx, req)
	if err != nil {
		return err
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errServerEndedWatch
			}
			return err
		}
		if !fn(Event{Type: eventTypeFromProto(m.GetType()), Sandbox: infoFromProto(m.GetSandbox())}) {
			return nil
		}
	}
}
