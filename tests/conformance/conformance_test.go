// Package conformance_test runs one set of cases against both backends of
// the gRPC contract: the local engine (the real `sandpod serve`) and the
// Kubernetes backend (the real `sandpod bridge` on the kwok bed, with
// sandpod's manager). A case is written once against the server's gRPC API;
// each asserts the status code and the ErrorInfo reason, so the two
// backends give one answer per RPC (docs/api.md, "One behaviour per RPC").
// Where a backend differs by design (Kubernetes serves no snapshots), the
// case says so where it asserts, with backend.kube.
package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Every backend serves these templates in namespace ns:
//
//   - plain: no pool, no auto-resume (a call on a suspended sandbox is
//     refused, not resumed);
//   - warm: as plain, with a warm pool "warm" of one;
//   - held: its sandboxes stay starting until the test ends (a wait that
//     cannot finish: deadlines, deletes while waiting);
//   - broken: its sandboxes fail to start.
const (
	tmplPlain  = "plain"
	tmplWarm   = "warm"
	tmplHeld   = "held"
	tmplBroken = "broken"
)

// token is the only bearer token both servers accept, and only for ns.
const token = "conformance-token"

// backend is a running server of one kind, as the cases see it.
type backend struct {
	kind string // "local" or "kube"
	ns   string
	// api carries the token; anon does not.
	api  pb.SandboxServiceClient
	anon *grpc.ClientConn
}

// kube says whether b is the Kubernetes backend: for the answers that are
// by design not the same on both (docs/api.md names them), and only those.
func (b *backend) kube() bool { return b.kind == "kube" }

// timeout is the deadline of a call expected to succeed: generous, since a
// loaded 2-core machine is slow, and it asserts nothing about speed.
const timeout = 90 * time.Second

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// want checks err's code and ErrorInfo reason.
func want(t *testing.T, what string, err error, code codes.Code, reason errinfo.Why) {
	t.Helper()
	if status.Code(err) != code || errinfo.Reason(err) != reason {
		t.Errorf("%s: got %s %q (%v), want %s %s", what, status.Code(err), errinfo.Reason(err), err, code, reason)
	}
}

// label tags what one case makes, so that counting it ignores the others.
func label(t *testing.T) map[string]string {
	name := strings.ToLower(t.Name()[strings.LastIndex(t.Name(), "/")+1:])
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, name)
	if len(name) > 50 {
		name = name[:50]
	}
	return map[string]string{"case": strings.Trim(name, "-")}
}

// count lists the sandboxes of this case (pool members included).
func (b *backend) count(t *testing.T, ctx context.Context, labels map[string]string) []*pb.Sandbox {
	t.Helper()
	var sel []string
	for k, v := range labels {
		sel = append(sel, k+"="+v)
	}
	resp, err := b.api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: b.ns, LabelSelector: strings.Join(sel, ","), IncludePoolMembers: true, PageSize: 1000})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return resp.GetSandboxes()
}

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// member waits for a ready, unclaimed member of the warm pool and returns
// its name.
func (b *backend) member(t *testing.T, ctx context.Context) string {
	t.Helper()
	var name string
	eventually(t, "a ready member of pool warm", func() (bool, string) {
		resp, err := b.api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: b.ns, IncludePoolMembers: true, PageSize: 1000})
		if err != nil {
			return false, err.Error()
		}
		for _, sb := range resp.GetSandboxes() {
			if sb.GetPool() == "warm" && !sb.GetClaimed() && sb.GetPhase() == pb.Phase_PHASE_RUNNING {
				name = sb.GetName()
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d sandboxes, none a ready member", len(resp.GetSandboxes()))
	})
	return name
}

// create makes a running sandbox of plain for a case.
func (b *backend) create(t *testing.T, ctx context.Context, req *pb.CreateSandboxRequest) *pb.Sandbox {
	t.Helper()
	req.Namespace = b.ns
	if req.Template == "" {
		req.Template = tmplPlain
	}
	if req.Labels == nil {
		req.Labels = label(t)
	}
	resp, err := b.api.CreateSandbox(ctx, req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return resp.GetSandbox()
}

func (b *backend) delete(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if _, err := b.api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: name, Namespace: b.ns}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
}

// cases are the conformance cases, run in order on each backend.
var cases = []struct {
	name string
	run  func(t *testing.T, b *backend)
}{
	{"RequestIDRetry", testRequestIDRetry},
	{"RequestIDOtherMethod", testRequestIDOtherMethod},
	{"RequestIDAfterDelete", testRequestIDAfterDelete},
	{"RequestIDConcurrent", testRequestIDConcurrent},
	{"WaitDeadline", testWaitDeadline},
	{"WaitNoWait", testWaitNoWait},
	{"WaitStartFailed", testWaitStartFailed},
	{"DeletedWhileWaiting", testDeletedWhileWaiting},
	{"Codes", testCodes},
	{"CodesUnclaimedMember", testCodesUnclaimedMember},
	{"CodesSuspended", testCodesSuspended},
	{"CodesAuth", testCodesAuth},
	{"Snapshots", testSnapshots},
}

func runCases(t *testing.T, b *backend) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, b) })
	}
}

// TestLocal runs the cases against `sandpod serve`.
func TestLocal(t *testing.T) { runCases(t, startLocal(t)) }

// TestKube runs the cases against `sandpod bridge` on the kwok bed.
func TestKube(t *testing.T) { runCases(t, startKube(t)) }
