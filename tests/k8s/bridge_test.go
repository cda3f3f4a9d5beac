package k8s_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/bridge/kube"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// startBridge runs the bridge's Kubernetes backend in-process against the
// kwok bed, limited to ns, behind a real gRPC server on loopback.
func startBridge(t *testing.T, ns string, auth ...bridge.Authenticator) pb.SandboxServiceClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	backend, err := kube.New(ctx, env.Config, kube.Options{Namespaces: []string{ns}, ActivityInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := bridge.New(backend)
	g, _ := srv.GRPCServer(bridge.Options{Authenticators: auth})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() { g.Stop(); srv.Close() })
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewSandboxServiceClient(conn)
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// wantWhy checks the ErrorInfo reason of err (docs/api.md lists them).
func wantWhy(t *testing.T, err error, reason errinfo.Why) {
	t.Helper()
	if got := errinfo.Reason(err); got != reason {
		t.Fatalf("reason %q, want %s (%v)", got, reason, err)
	}
}

func wantCode(t *testing.T, err error, code codes.Code, what string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
}

func TestBridgeClaimIsWarmAndIdempotent(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	tmpl := makeTemplate(ns, "py")
	tmpl.Spec.Lifecycle.IdleTimeout = nil
	create(t, tmpl, makePool(ns, "pool", "py", 2))
	waitPoolReady(t, ns, "pool", 2, "")
	api := startBridge(t, ns)
	ctx := callCtx(t)

	req := &pb.ClaimSandboxRequest{Template: "py", Namespace: ns, RequestId: "req-1", Labels: map[string]string{"team": "rl"},
		Env: map[string]string{"TASK": "7"}, Ttl: durationpb.New(time.Hour)}
	first, err := api.ClaimSandbox(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	sb := first.GetSandbox()
	if !first.GetWarm() || sb.GetPool() != "pool" || sb.GetPhase() != pb.Phase_PHASE_RUNNING || !sb.GetClaimed() {
		t.Errorf("claim = warm %v, pool %q, phase %s, claimed %v; want a running warm member of pool", first.GetWarm(), sb.GetPool(), sb.GetPhase(), sb.GetClaimed())
	}
	if sb.GetLabels()["team"] != "rl" || len(sb.GetEnvKeys()) != 1 || sb.GetShutdownTime() == nil {
		t.Errorf("claimed sandbox labels %v env %v shutdown %v", sb.GetLabels(), sb.GetEnvKeys(), sb.GetShutdownTime())
	}
	again, err := api.ClaimSandbox(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.GetSandbox().GetName() != sb.GetName() {
		t.Errorf("a retry with the same request id got %s, the first call %s", again.GetSandbox().GetName(), sb.GetName())
	}
	all, err := api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.GetSandboxes()) != 1 {
		t.Errorf("%d claimed sandboxes after a retried claim, want 1", len(all.GetSandboxes()))
	}
	var claims v1alpha1.SandboxClaimList
	if err := env.Client.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) != 0 {
		t.Errorf("a warm claim through the bridge made %d SandboxClaims (%v), want none: it is one patch of the member", len(claims.Items), err)
	}
	// The pool refills behind the claim.
	waitPoolReady(t, ns, "pool", 2, "")

	_, err = api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "nope", Namespace: ns})
	wantCode(t, err, codes.NotFound, "claim of an unknown template")
	wantWhy(t, err, errinfo.ReasonTemplateNotFound)
	_, err = api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns, Labels: map[string]string{v1alpha1.LabelPool: "pool"}})
	wantCode(t, err, codes.InvalidArgument, "claim with a reserved label")
	wantWhy(t, err, errinfo.ReasonInvalidLabels)

	// A third claim with the pool empty starts one cold.
	if _, err := api.ScaleWarmPool(ctx, &pb.ScaleWarmPoolRequest{Name: "pool", Namespace: ns, Replicas: 0}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, harness.Timeout, "the pool to be empty", func() (bool, string) {
		all, err := api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: ns, IncludePoolMembers: true})
		return err == nil && len(all.GetSandboxes()) == 1, fmt.Sprint(len(all.GetSandboxes()), err)
	})
	cold, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns, RequestId: "req-2"})
	if err != nil {
		t.Fatal(err)
	}
	if cold.GetWarm() || cold.GetSandbox().GetPool() != "" || cold.GetSandbox().GetPhase() != pb.Phase_PHASE_RUNNING {
		t.Errorf("claim with an empty pool = warm %v pool %q phase %s, want a running cold sandbox", cold.GetWarm(), cold.GetSandbox().GetPool(), cold.GetSandbox().GetPhase())
	}

	if _, err := api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: sb.GetName(), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &v1alpha1.Sandbox{}, ns, sb.GetName())
}

func TestBridgeLifecycle(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 1))
	waitPoolReady(t, ns, "pool", 1, "")
	api := startBridge(t, ns)
	ctx := callCtx(t)

	watch, err := api.WatchSandboxes(ctx, &pb.WatchSandboxesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	created, err := api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: "py", Namespace: ns, Name: "box", RequestId: "create-1"})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetSandbox().GetPhase() != pb.Phase_PHASE_RUNNING || created.GetSandbox().GetPool() != "" {
		t.Errorf("create = %v", created.GetSandbox())
	}
	if _, err := api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: "py", Namespace: ns, Name: "box", RequestId: "create-1"}); err != nil {
		t.Errorf("retried create: %v", err)
	}
	_, err = api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: "py", Namespace: ns, Name: "box", RequestId: "other"})
	wantCode(t, err, codes.AlreadyExists, "create of a taken name")
	wantWhy(t, err, errinfo.ReasonSandboxExists)

	ev, err := watch.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if ev.GetSandbox().GetName() != "box" {
		t.Errorf("first watch event is about %q, want box (pool members are not shown)", ev.GetSandbox().GetName())
	}

	list, err := api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	all, err := api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: ns, IncludePoolMembers: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetSandboxes()) != 1 || len(all.GetSandboxes()) != 2 {
		t.Errorf("list = %d sandboxes, with pool members %d; want 1 and 2", len(list.GetSandboxes()), len(all.GetSandboxes()))
	}

	if _, err := api.SuspendSandbox(ctx, &pb.SuspendSandboxRequest{Name: "box", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	waitSandbox(t, ns, "box", "suspended", phaseIs(v1alpha1.SandboxSuspended))
	got, err := api.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "box", Namespace: ns})
	if err != nil || got.GetSandbox().GetPhase() != pb.Phase_PHASE_SUSPENDED {
		t.Fatalf("get after suspend = %v, %v", got.GetSandbox().GetPhase(), err)
	}
	_, err = api.ListFiles(ctx, &pb.ListFilesRequest{Sandbox: "box", Namespace: ns, Path: "."})
	wantCode(t, err, codes.FailedPrecondition, "files of a suspended sandbox whose template does not auto-resume")
	wantWhy(t, err, errinfo.ReasonSandboxSuspended)

	res, err := api.ResumeSandbox(ctx, &pb.ResumeSandboxRequest{Name: "box", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetSandbox().GetPhase() != pb.Phase_PHASE_RUNNING {
		t.Errorf("resume returned phase %s", res.GetSandbox().GetPhase())
	}

	ext, err := api.ExtendSandbox(ctx, &pb.ExtendSandboxRequest{Name: "box", Namespace: ns, Ttl: durationpb.New(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(ext.GetSandbox().GetShutdownTime().AsTime()); d < time.Hour || d > 3*time.Hour {
		t.Errorf("extend: shutdown in %s, want about 2h", d)
	}

	pool, err := api.ScaleWarmPool(ctx, &pb.ScaleWarmPoolRequest{Name: "pool", Namespace: ns, Replicas: 2})
	if err != nil || pool.GetWarmPool().GetReplicas() != 2 {
		t.Fatalf("scale = %v, %v", pool.GetWarmPool(), err)
	}
	waitPoolReady(t, ns, "pool", 2, "")
	tmpls, err := api.ListTemplates(ctx, &pb.ListTemplatesRequest{Namespace: ns})
	if err != nil || len(tmpls.GetTemplates()) != 1 || tmpls.GetTemplates()[0].GetImage() == "" {
		t.Errorf("templates = %v, %v", tmpls.GetTemplates(), err)
	}

	if _, err := api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "box", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	// Gone for callers at once, while the controller still cleans up.
	_, err = api.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "box", Namespace: ns})
	wantCode(t, err, codes.NotFound, "get right after delete")
	wantWhy(t, err, errinfo.ReasonSandboxNotFound)
	_, err = api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "box", Namespace: ns})
	wantCode(t, err, codes.NotFound, "a second delete")
	wantWhy(t, err, errinfo.ReasonSandboxNotFound)
	waitGone(t, &v1alpha1.Sandbox{}, ns, "box")
}

// TestBridgeTokenReview: a service account's token is accepted through
// TokenReview, and RBAC (may it create SandboxClaims there?) decides each
// namespace.
func TestBridgeTokenReview(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"))
	reviewer, err := kube.NewTokenReviewer(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	api := startBridge(t, ns, reviewer)
	ctx := callCtx(t)

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sandbox-user"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"sandpod.dev"}, Resources: []string{"sandboxclaims"}, Verbs: []string{"create"},
	}}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "sandbox-user"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "alice", Namespace: ns}},
	}
	create(t, sa, role, binding)
	tr, err := env.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "alice", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}

	if _, err := api.ListTemplates(as(tr.Status.Token), &pb.ListTemplatesRequest{Namespace: ns}); err != nil {
		t.Errorf("alice in her namespace: %v", err)
	}
	_, err = api.ListTemplates(as(tr.Status.Token), &pb.ListTemplatesRequest{Namespace: "kube-system"})
	wantCode(t, err, codes.PermissionDenied, "alice in a namespace where RBAC does not let her claim")
	wantWhy(t, err, errinfo.ReasonNamespaceForbidden)
	_, err = api.ListTemplates(as("not-a-token"), &pb.ListTemplatesRequest{Namespace: ns})
	wantCode(t, err, codes.Unauthenticated, "an unknown token")
	wantWhy(t, err, errinfo.ReasonInvalidToken)
	_, err = api.ListTemplates(ctx, &pb.ListTemplatesRequest{Namespace: ns})
	wantCode(t, err, codes.Unauthenticated, "no token")
	wantWhy(t, err, errinfo.ReasonInvalidToken)
}

// TestBridgeConcurrentClaimsNeverShare: claims racing for a pool each get
// their own sandbox, the ready members warm and the rest cold.
func TestBridgeConcurrentClaimsNeverShare(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "py"), makePool(ns, "pool", "py", 4))
	waitPoolReady(t, ns, "pool", 4, "")
	api := startBridge(t, ns)
	ctx := callCtx(t)

	const n = 8
	type result struct {
		name string
		warm bool
		err  error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			r, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns, RequestId: fmt.Sprintf("burst-%d", i)})
			results <- result{r.GetSandbox().GetName(), r.GetWarm(), err}
		}()
	}
	names, warm := map[string]bool{}, 0
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if names[r.name] {
			t.Errorf("sandbox %s handed out twice", r.name)
		}
		names[r.name] = true
		if r.warm {
			warm++
		}
	}
	if warm < 1 || warm > 4 {
		t.Errorf("%d of %d claims warm with 4 ready members", warm, n)
	}
}
