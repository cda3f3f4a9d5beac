package integration

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

func TestListPagesAndWatch(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	watch, err := c.WatchSandboxes(ctx(t), &sandpodv1.WatchSandboxesRequest{LabelSelector: "team=rl"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil { // the watch is live from here on
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := 0; i < 3; i++ {
		resp, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", Labels: map[string]string{"team": "rl"}})
		if err != nil {
			t.Fatal(err)
		}
		want[resp.GetSandbox().GetName()] = true
	}
	if _, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", Labels: map[string]string{"team": "other"}}); err != nil {
		t.Fatal(err)
	}

	got := map[string]bool{}
	token := ""
	for pages := 0; ; pages++ {
		resp, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{LabelSelector: "team=rl", PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range resp.GetSandboxes() {
			got[sb.GetName()] = true
		}
		if token = resp.GetNextPageToken(); token == "" {
			if pages != 1 {
				t.Fatalf("3 items in pages of 2 took %d pages", pages+1)
			}
			break
		}
	}
	if len(got) != 3 {
		t.Fatalf("paged list found %v, want %v", got, want)
	}
	seen := map[string]bool{}
	for len(seen) < 3 {
		ev, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetSandbox().GetLabels()["team"] != "rl" {
			t.Fatalf("watch with a selector sent %v", ev.GetSandbox().GetLabels())
		}
		seen[ev.GetSandbox().GetName()] = true
	}
}

func TestTokenAuthHealthAndReflection(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Token: "s3cret"})
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = sandpodv1.NewSandboxServiceClient(conn).ListTemplates(ctx(t), &sandpodv1.ListTemplatesRequest{})
	wantCode(t, err, codes.Unauthenticated, "token")
	wantWhy(t, err, errinfo.ReasonInvalidToken)

	// With the token (the test server's own connection carries it).
	tpl, err := srv.Client().ListTemplates(ctx(t), &sandpodv1.ListTemplatesRequest{})
	if err != nil || len(tpl.GetTemplates()) != 1 || tpl.GetTemplates()[0].GetName() != "python" {
		t.Fatalf("templates: %v %v", tpl, err)
	}
	// Probes need no token.
	h, err := healthpb.NewHealthClient(conn).Check(ctx(t), &healthpb.HealthCheckRequest{Service: "sandpod.v1.SandboxService"})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", h, err)
	}
	// Reflection lists the service, so grpcurl works.
	rs, err := reflectionpb.NewServerReflectionClient(srv.Conn()).ServerReflectionInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	_ = rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	resp, err := rs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = rs.CloseSend()
	found := false
	for _, s := range resp.GetListServicesResponse().GetService() {
		found = found || s.GetName() == "sandpod.v1.SandboxService"
	}
	if !found {
		t.Fatalf("reflection does not list sandpod.v1.SandboxService: %v", resp)
	}
}
