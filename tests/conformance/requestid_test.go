package conformance_test

import (
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// rid is a request id of this case on this backend (both servers keep ids
// per namespace, and the kwok bed's namespace is fresh, the local one not).
func rid(t *testing.T, b *backend, n int) string {
	return fmt.Sprintf("%s-%s-%d", b.kind, label(t)["case"], n)
}

// A retry (same method, same id) answers what the first call got, and makes
// nothing more; so does a retry whose other fields differ.
func testRequestIDRetry(t *testing.T, b *backend) {
	ctx := callCtx(t)
	lbl := label(t)
	create := &pb.CreateSandboxRequest{Template: tmplPlain, Namespace: b.ns, RequestId: rid(t, b, 1), Labels: lbl}
	first, err := b.api.CreateSandbox(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.api.CreateSandbox(ctx, create)
	if err != nil || again.GetSandbox().GetName() != first.GetSandbox().GetName() {
		t.Errorf("retried create: %v, %v; want %s", again.GetSandbox().GetName(), err, first.GetSandbox().GetName())
	}
	other := &pb.CreateSandboxRequest{Template: tmplPlain, Namespace: b.ns, RequestId: rid(t, b, 1), Labels: lbl, Name: "another-name"}
	if got, err := b.api.CreateSandbox(ctx, other); err != nil || got.GetSandbox().GetName() != first.GetSandbox().GetName() {
		t.Errorf("retried create with another name: %v, %v; want %s (the first request wins)", got.GetSandbox().GetName(), err, first.GetSandbox().GetName())
	}

	claim := &pb.ClaimSandboxRequest{Template: tmplWarm, Namespace: b.ns, RequestId: rid(t, b, 2), Labels: lbl}
	c1, err := b.api.ClaimSandbox(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := b.api.ClaimSandbox(ctx, claim)
	if err != nil || c2.GetSandbox().GetName() != c1.GetSandbox().GetName() || c2.GetWarm() != c1.GetWarm() {
		t.Errorf("retried claim: %s warm %v, %v; want %s warm %v", c2.GetSandbox().GetName(), c2.GetWarm(), err, c1.GetSandbox().GetName(), c1.GetWarm())
	}
	if n := len(b.count(t, ctx, lbl)); n != 2 {
		t.Errorf("%d sandboxes after retries of one create and one claim, want 2", n)
	}
}

// An id first used by the other method is refused: nothing is made, and
// the first sandbox is not handed to the other method.
func testRequestIDOtherMethod(t *testing.T, b *backend) {
	ctx := callCtx(t)
	lbl := label(t)
	if _, err := b.api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: tmplWarm, Namespace: b.ns, RequestId: rid(t, b, 1), Labels: lbl}); err != nil {
		t.Fatal(err)
	}
	_, err := b.api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: tmplPlain, Namespace: b.ns, RequestId: rid(t, b, 1), Labels: lbl})
	want(t, "create with a claim's request id", err, codes.InvalidArgument, errinfo.ReasonRequestIDReused)

	if _, err := b.api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: tmplPlain, Namespace: b.ns, RequestId: rid(t, b, 2), Labels: lbl}); err != nil {
		t.Fatal(err)
	}
	_, err = b.api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: tmplWarm, Namespace: b.ns, RequestId: rid(t, b, 2), Labels: lbl})
	want(t, "claim with a create's request id", err, codes.InvalidArgument, errinfo.ReasonRequestIDReused)
	_, err = b.api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: tmplPlain, Namespace: b.ns, RequestId: rid(t, b, 2), Labels: lbl})
	want(t, "claim (of the create's template) with a create's request id", err, codes.InvalidArgument, errinfo.ReasonRequestIDReused)
	if n := len(b.count(t, ctx, lbl)); n != 2 {
		t.Errorf("%d sandboxes, want 2: a reused id makes nothing", n)
	}
}

// An id names at most one live sandbox: once that sandbox is deleted, the
// id is free, and the same request makes a new one (a new uid).
func testRequestIDAfterDelete(t *testing.T, b *backend) {
	ctx := callCtx(t)
	lbl := label(t)
	for _, method := range []string{"create", "claim"} {
		call := func() (*pb.Sandbox, error) {
			if method == "create" {
				r, err := b.api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: tmplPlain, Namespace: b.ns, RequestId: rid(t, b, 1), Labels: lbl})
				return r.GetSandbox(), err
			}
			r, err := b.api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: tmplWarm, Namespace: b.ns, RequestId: rid(t, b, 2), Labels: lbl})
			return r.GetSandbox(), err
		}
		first, err := call()
		if err != nil {
			t.Fatal(err)
		}
		b.delete(t, ctx, first.GetName())
		// While the sandbox is being deleted (on Kubernetes, until the
		// Sandbox object is gone) the id still names it.
		var again *pb.Sandbox
		eventually(t, "a "+method+" reusing the deleted sandbox's request id to make a new one", func() (bool, string) {
			again, err = call()
			if err != nil {
				if errinfo.Reason(err) != errinfo.ReasonRequestIDSandboxDeleted {
					t.Fatalf("%s reusing a deleted sandbox's request id: %v", method, err)
				}
				return false, err.Error()
			}
			return true, ""
		})
		if again.GetUid() == first.GetUid() {
			t.Errorf("%s after delete returned the deleted sandbox (uid %s)", method, first.GetUid())
		}
		if n := len(b.count(t, ctx, lbl)); n != 1 {
			t.Errorf("%d sandboxes after the %s, want 1", n, method)
		}
		b.delete(t, ctx, again.GetName())
	}
}

// Concurrent calls with one id get one sandbox.
func testRequestIDConcurrent(t *testing.T, b *backend) {
	ctx := callCtx(t)
	lbl := label(t)
	b.member(t, ctx) // the claims race for a ready member, not for a cold start
	const n = 4
	for _, method := range []string{"create", "claim"} {
		names := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if method == "create" {
					r, err := b.api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: tmplPlain, Namespace: b.ns, RequestId: rid(t, b, 1), Labels: lbl})
					names[i], errs[i] = r.GetSandbox().GetName(), err
					return
				}
				r, err := b.api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: tmplWarm, Namespace: b.ns, RequestId: rid(t, b, 2), Labels: lbl})
				names[i], errs[i] = r.GetSandbox().GetName(), err
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || names[i] != names[0] {
				t.Errorf("concurrent %s %d: %s, %v; want %s like the first", method, i, names[i], errs[i], names[0])
			}
		}
	}
	if got := b.count(t, ctx, lbl); len(got) != 2 {
		t.Errorf("%d sandboxes after %d concurrent creates and claims with one id each, want 2: %v", len(got), n, names(got))
	}
}

func names(sbs []*pb.Sandbox) []string {
	var out []string
	for _, sb := range sbs {
		out = append(out, sb.GetName())
	}
	return out
}
