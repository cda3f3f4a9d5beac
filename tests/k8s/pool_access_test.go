package k8s_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// TestBridgeRefusesUnclaimedPoolMembers: through the bridge, an unclaimed
// warm pool member refuses exec, file and lifecycle calls with the local
// engine's answer; a member suspended by anything else is replaced; a
// member a SandboxClaim took is reachable at once.
func TestBridgeRefusesUnclaimedPoolMembers(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 2))
	ms := waitPoolReady(t, ns, "pool", 2, "")
	api := startBridge(t, ns)
	ctx := callCtx(t)
	name := ms[0].Name

	refused := func(what string, err error) {
		t.Helper()
		want := fmt.Sprintf("sandbox %q is an unclaimed member of warm pool \"pool\"; claim one first (ClaimSandbox with template \"py\")", name)
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), want) {
			t.Errorf("%s on an unclaimed member: %v; want FAILED_PRECONDITION %q", what, err, want)
		}
	}
	stream, err := api.Exec(ctx)
	if err == nil {
		_ = stream.Send(&pb.ExecRequest{Msg: &pb.ExecRequest_Start{Start: &pb.ExecStart{Sandbox: name, Namespace: ns, Shell: "touch planted"}}})
		_, err = stream.Recv()
	}
	refused("Exec", err)
	if code, err := api.RunCode(ctx, &pb.RunCodeRequest{Sandbox: name, Namespace: ns, Code: "open('planted', 'w')"}); err == nil {
		_, err = code.Recv()
		refused("RunCode", err)
	} else {
		refused("RunCode", err)
	}
	_, err = api.CreateCodeContext(ctx, &pb.CreateCodeContextRequest{Sandbox: name, Namespace: ns})
	refused("CreateCodeContext", err)
	_, err = api.ListFiles(ctx, &pb.ListFilesRequest{Sandbox: name, Namespace: ns, Path: "."})
	refused("ListFiles", err)
	_, err = api.SuspendSandbox(ctx, &pb.SuspendSandboxRequest{Name: name, Namespace: ns})
	refused("SuspendSandbox", err)
	_, err = api.ResumeSandbox(ctx, &pb.ResumeSandboxRequest{Name: name, Namespace: ns})
	refused("ResumeSandbox", err)
	_, err = api.PauseSandbox(ctx, &pb.PauseSandboxRequest{Name: name, Namespace: ns})
	refused("PauseSandbox", err)
	_, err = api.ExtendSandbox(ctx, &pb.ExtendSandboxRequest{Name: name, Namespace: ns, Ttl: durationpb.New(time.Hour)})
	refused("ExtendSandbox", err)
	if got, err := api.GetSandbox(ctx, &pb.GetSandboxRequest{Name: name, Namespace: ns}); err != nil ||
		got.GetSandbox().GetClaimed() || got.GetSandbox().GetShutdownTime() != nil {
		t.Fatalf("the member after the refused calls: %v, %v", got.GetSandbox(), err)
	}

	// Suspended by something else (an operator's patch, as the idle policy
	// writes it): the pool replaces it.
	setMode(t, ns, name, v1alpha1.OperatingModeSuspended)
	harness.Eventually(t, harness.Timeout, "the suspended member replaced", func() (bool, string) {
		var names []string
		for _, m := range poolMembers(t, ns, "pool") {
			if m.Name == name {
				return false, "still a member: " + string(m.Status.Phase)
			}
			names = append(names, m.Name)
		}
		return len(names) == 2, fmt.Sprint(names)
	})
	waitPoolReady(t, ns, "pool", 2, "")

	// Deleting a member is allowed; the pool refills.
	name = poolMembers(t, ns, "pool")[0].Name
	if _, err := api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: name, Namespace: ns}); err != nil {
		t.Fatalf("delete of an unclaimed member: %v", err)
	}
	waitGone(t, &v1alpha1.Sandbox{}, ns, name)
	waitPoolReady(t, ns, "pool", 2, "")

	// A member a SandboxClaim took (the bridge's cache may lag that write):
	// the calls reach it.
	create(t, makeClaim(ns, "job", "py"))
	bound := waitClaimReady(t, ns, "job").Status.SandboxName
	if _, err := api.ExtendSandbox(ctx, &pb.ExtendSandboxRequest{Name: bound, Namespace: ns, Ttl: durationpb.New(time.Hour)}); err != nil {
		t.Fatalf("extend of a claimed member: %v", err)
	}
}
