package k8s_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/k8s/harness"
)

// Until the SandboxSnapshot resource exists, the bridge on Kubernetes
// answers every snapshot call (and a create or claim from a snapshot)
// UNIMPLEMENTED over real gRPC, naming what is missing, and the API server
// refuses a SandboxWarmPool that names a snapshot: nothing is silently
// made without the snapshot's files.
func TestSnapshotsAreNotServedOnKubernetesYet(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"))
	api := startBridge(t, ns)
	ctx := callCtx(t)
	errs := map[string]error{}
	_, errs["snapshot"] = api.SnapshotSandbox(ctx, &pb.SnapshotSandboxRequest{Sandbox: "a", Namespace: ns})
	_, errs["list"] = api.ListSnapshots(ctx, &pb.ListSnapshotsRequest{Namespace: ns})
	_, errs["fork"] = api.ForkSandbox(ctx, &pb.ForkSandboxRequest{Snapshot: "s", Count: 2, Namespace: ns})
	_, errs["restore"] = api.RestoreSandbox(ctx, &pb.RestoreSandboxRequest{Name: "a", Snapshot: "s", Namespace: ns})
	_, errs["claim"] = api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Snapshot: "s", Namespace: ns})
	for what, err := range errs {
		wantCode(t, err, codes.Unimplemented, what)
		if !strings.Contains(status.Convert(err).Message(), "SandboxSnapshot") {
			t.Errorf("%s: %v does not name what is missing", what, err)
		}
	}
	pool := makePool(ns, "forks", "py", 1)
	pool.Spec.Snapshot = "s"
	if err := env.Client.Create(ctx, pool); err == nil || !strings.Contains(err.Error(), "local engine only") {
		t.Errorf("a pool naming a snapshot: %v, want the CRD's refusal", err)
	}
}
