package agent

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The health service answers anyone (a kubelet's liveness probe has no
// secret); everything else needs the sandbox's secret.
func TestHealthNeedsNoSecretAgentCallsDo(t *testing.T) {
	srv, err := New(Config{Sandbox: "sb", Root: t.TempDir(), Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	conn := serveInMemory(t, srv)
	ctx := context.Background()

	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health without a secret: %v %v, want SERVING", h, err)
	}
	before := srv.lastActivity.Load()
	agent := sandpodv1.NewAgentServiceClient(conn)
	if _, err := agent.GetAgentInfo(ctx, &sandpodv1.GetAgentInfoRequest{}); status.Code(err) != codes.Unauthenticated ||
		errinfo.Reason(err) != errinfo.ReasonAgentSecretMismatch {
		t.Errorf("GetAgentInfo without a secret: %v (reason %q), want Unauthenticated, %s", err, errinfo.Reason(err), errinfo.ReasonAgentSecretMismatch)
	}
	if srv.lastActivity.Load() != before {
		t.Error("a health check or refused call counted as activity (it would keep an idle sandbox awake)")
	}
	withSecret := metadata.AppendToOutgoingContext(ctx, agentconn.SecretMetadataKey, "s3cret")
	if info, err := agent.GetAgentInfo(withSecret, &sandpodv1.GetAgentInfoRequest{}); err != nil || info.Sandbox != "sb" {
		t.Errorf("GetAgentInfo with the secret: %v %v", info, err)
	}
}
