package conformance_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// shortDeadline is the deadline of a call that waits for a held sandbox:
// the server answers shortly before it with its own reason.
const shortDeadline = 5 * time.Second

func short(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), shortDeadline)
	t.Cleanup(cancel)
	return ctx
}

// untilServerAnswers repeats a call that waits past its deadline while it
// ends with gRPC's own DEADLINE_EXCEEDED (no reason): the server answers
// half a second before the deadline, and a loaded machine may stall its
// answer past it once. A server that never answers first still fails.
func untilServerAnswers(call func(context.Context) error, ctx func() context.Context) error {
	var err error
	for range 3 {
		if err = call(ctx()); status.Code(err) != codes.DeadlineExceeded || errinfo.Reason(err) != "" {
			return err
		}
	}
	return err
}

// A wait that outlives the call's deadline ends with the server's
// DEADLINE_EXCEEDED (SANDBOX_NOT_READY), not gRPC's bare one; the sandbox
// stays, PENDING, and a retry with the same id waits for it again.
func testWaitDeadline(t *testing.T, b *backend) {
	ctx := callCtx(t)
	lbl := label(t)
	req := &pb.CreateSandboxRequest{Template: tmplHeld, Namespace: b.ns, Name: "held-deadline-" + b.kind, RequestId: rid(t, b, 1), Labels: lbl}
	create := func(ctx context.Context) error { _, err := b.api.CreateSandbox(ctx, req); return err }
	err := untilServerAnswers(create, func() context.Context { return short(t) })
	want(t, "create of a sandbox that does not start in time", err, codes.DeadlineExceeded, errinfo.ReasonSandboxNotReady)
	got, err := b.api.GetSandbox(ctx, &pb.GetSandboxRequest{Name: req.Name, Namespace: b.ns})
	if err != nil || got.GetSandbox().GetPhase() != pb.Phase_PHASE_PENDING {
		t.Errorf("after the deadline: %v, %v; want the sandbox, PENDING", got.GetSandbox().GetPhase(), err)
	}
	err = untilServerAnswers(create, func() context.Context { return short(t) })
	want(t, "retried create of a sandbox still starting", err, codes.DeadlineExceeded, errinfo.ReasonSandboxNotReady)

	err = untilServerAnswers(func(ctx context.Context) error {
		_, err := b.api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: tmplHeld, Namespace: b.ns, RequestId: rid(t, b, 2), Labels: lbl})
		return err
	}, func() context.Context { return short(t) })
	want(t, "claim (cold) of a sandbox that does not start in time", err, codes.DeadlineExceeded, errinfo.ReasonSandboxNotReady)
	if n := len(b.count(t, ctx, lbl)); n != 2 {
		t.Errorf("%d sandboxes after a create, a claim and a retry, want 2", n)
	}
	for _, sb := range b.count(t, ctx, lbl) {
		b.delete(t, ctx, sb.GetName())
	}
}

// no_wait answers at once with the accepted sandbox.
func testWaitNoWait(t *testing.T, b *backend) {
	ctx := callCtx(t)
	got, err := b.api.CreateSandbox(short(t), &pb.CreateSandboxRequest{Template: tmplHeld, Namespace: b.ns, NoWait: true, Labels: label(t)})
	if err != nil {
		t.Fatalf("create no_wait of a sandbox that does not start: %v", err)
	}
	if p := got.GetSandbox().GetPhase(); p != pb.Phase_PHASE_PENDING {
		t.Errorf("create no_wait: phase %s, want PENDING", p)
	}
	b.delete(t, ctx, got.GetSandbox().GetName())
}

// A sandbox that fails to start fails the wait with UNAVAILABLE
// (SANDBOX_START_FAILED); it stays, FAILED.
func testWaitStartFailed(t *testing.T, b *backend) {
	ctx := callCtx(t)
	lbl := label(t)
	no := false
	_, err := b.api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: tmplBroken, Namespace: b.ns, Name: "broken-" + b.kind, Labels: lbl, RestartOnFailure: &no})
	want(t, "create of a sandbox that fails to start", err, codes.Unavailable, errinfo.ReasonSandboxStartFailed)
	got, err := b.api.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "broken-" + b.kind, Namespace: b.ns})
	if err != nil || got.GetSandbox().GetPhase() != pb.Phase_PHASE_FAILED {
		t.Errorf("after the failed start: %v, %v; want the sandbox, FAILED", got.GetSandbox().GetPhase(), err)
	}
	b.delete(t, ctx, "broken-"+b.kind)
}

// A sandbox deleted while a create or claim waits for it ends the wait
// with NOT_FOUND (SANDBOX_NOT_FOUND), on both backends.
func testDeletedWhileWaiting(t *testing.T, b *backend) {
	ctx := callCtx(t)
	lbl := label(t)
	for _, method := range []string{"create", "claim"} {
		errc := make(chan error, 1)
		go func() {
			if method == "create" {
				_, err := b.api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: tmplHeld, Namespace: b.ns, Labels: lbl})
				errc <- err
				return
			}
			_, err := b.api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: tmplHeld, Namespace: b.ns, Labels: lbl})
			errc <- err
		}()
		var name string
		eventually(t, "the "+method+"'s sandbox", func() (bool, string) {
			got := b.count(t, ctx, lbl)
			if len(got) == 1 {
				name = got[0].GetName()
			}
			return name != "", "none yet"
		})
		b.delete(t, ctx, name)
		select {
		case err := <-errc:
			want(t, method+" whose sandbox was deleted while it waited", err, codes.NotFound, errinfo.ReasonSandboxNotFound)
		case <-ctx.Done():
			t.Fatalf("the %s still waits for its deleted sandbox", method)
		}
		eventually(t, "the deleted sandbox to go", func() (bool, string) {
			n := len(b.count(t, ctx, lbl))
			return n == 0, "still listed"
		})
	}
}
