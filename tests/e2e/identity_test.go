package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// TestPodDeletedByHandComesBack: a sandbox's pod deleted behind sandpod's
// back is made again with the same name, hostname and storage.
func TestPodDeletedByHandComesBack(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, WithVolume(Template(ns, "python-pvc", PythonImage), "workspace", "/workspace"))
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	sb, err := c.Claim(ctx, "python-pvc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Files().WriteFile(ctx, "state.txt", []byte("step 41")); err != nil {
		t.Fatal(err)
	}
	before := env.Pod(t, env.WaitSandboxReady(t, ns, sb.Name()))
	if err := env.Client.Delete(ctx, before); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "a new pod for the sandbox", func() (bool, string) {
		pod := &corev1.Pod{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: before.Name}, pod)
		return err == nil && pod.UID != before.UID && pod.DeletionTimestamp == nil, fmt.Sprint(err)
	})
	after := env.Pod(t, env.WaitSandboxReady(t, ns, sb.Name()))
	if after.Name != sb.Name() || after.Spec.Hostname != sb.Name() {
		t.Errorf("new pod %s (hostname %q), want the sandbox's name %s", after.Name, after.Spec.Hostname, sb.Name())
	}
	res, err := sb.Run(ctx, "cat state.txt; echo; hostname")
	if err != nil || string(res.Stdout) != "step 41\n"+sb.Name()+"\n" {
		t.Errorf("after the pod came back: %q, %v; want the file and the same hostname", res.Stdout, err)
	}
}

// TestAgentRefusesCallsWithoutItsSecret: the agent in a pod answers only
// callers with its own sandbox's secret, so whatever reaches port 7070 of
// a sandbox (here the node itself, which NetworkPolicy does not stop; on a
// cluster without an enforcing CNI, any pod) still cannot run
// anything there, not even with its own sandbox's secret. The agent speaks
// TLS with its sandbox's own certificate: a plaintext caller gets nowhere,
// and a caller that pins another sandbox's certificate (as the bridge would
// after that sandbox's pod IP was reused) sends nothing.
func TestAgentRefusesCallsWithoutItsSecret(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 2))
	env.WaitPoolReady(t, ns, "python", 2)
	_, a := env.Claim(t, ns, "a", "python")
	_, b := env.Claim(t, ns, "b", "python")
	ctx := Context(t)
	agentA, agentB := env.Agent(t, a), env.Agent(t, b)

	list := func(ctx context.Context, ag *Agent) error {
		_, err := ag.Client.ListFiles(ctx, &sandpodv1.ListFilesRequest{Path: "."})
		return err
	}
	if err := list(agentB.Context(ctx), agentB); err != nil {
		t.Fatalf("b's agent with b's secret: %v", err)
	}
	if err := list(ctx, agentB); status.Code(err) != codes.Unauthenticated {
		t.Errorf("b's agent without a secret: %v, want Unauthenticated", err)
	}
	withA := metadata.AppendToOutgoingContext(ctx, agentconn.SecretMetadataKey, agentA.secret)
	if err := list(withA, agentB); status.Code(err) != codes.Unauthenticated {
		t.Errorf("b's agent with a's secret: %v, want Unauthenticated", err)
	}
	target := net.JoinHostPort(b.Status.PodIPs[0], fmt.Sprint(v1alpha1.AgentPort))
	for what, creds := range map[string]credentials.TransportCredentials{
		"plaintext":              insecure.NewCredentials(),
		"a's certificate pinned": credentials.NewTLS(agentA.tls),
	} {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		callCtx, cancel := context.WithTimeout(agentB.Context(ctx), 10*time.Second)
		_, err = sandpodv1.NewAgentServiceClient(conn).ListFiles(callCtx, &sandpodv1.ListFilesRequest{Path: "."})
		cancel()
		_ = conn.Close()
		if err == nil {
			t.Errorf("b's agent answered a %s caller (with b's secret)", what)
		}
	}
	// Inside a, only a's own secret is visible.
	res, err := agentA.Shell(ctx, "cat /sandpod/secret/agent-secret")
	if err != nil || strings.TrimSpace(res.Stdout) != agentA.secret || strings.Contains(res.Stdout, agentB.secret) {
		t.Errorf("a sees %q (%v); want its own secret only", res.Stdout, err)
	}
}

// TestWarmPoolRollsOnTemplateChange: a template change replaces the pool's
// ready members with members of the new template; a claim then gets one.
func TestWarmPoolRollsOnTemplateChange(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	tmpl := Template(ns, "python", PythonImage)
	env.Apply(t, tmpl, Pool(ns, "python", "python", 2))
	env.WaitPoolReady(t, ns, "python", 2)
	ctx := Context(t)
	members := func() ([]v1alpha1.Sandbox, error) {
		var list v1alpha1.SandboxList
		err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPool: "python"})
		return list.Items, err
	}
	old, err := members()
	if err != nil || len(old) == 0 {
		t.Fatalf("pool members: %v, %v", old, err)
	}
	oldHash := old[0].Labels[v1alpha1.LabelTemplateHash]

	tmpl.Spec.PodTemplate.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TEMPLATE_VERSION", Value: "2"}}
	env.Apply(t, tmpl)
	env.Eventually(t, "the pool's members to be of the new template", func() (bool, string) {
		items, err := members()
		if err != nil {
			return false, err.Error()
		}
		ready, hashes := 0, map[string]int{}
		for _, sb := range items {
			hashes[sb.Labels[v1alpha1.LabelTemplateHash]]++
			if sb.Status.Phase == v1alpha1.SandboxRunning && sb.DeletionTimestamp == nil {
				ready++
			}
		}
		return len(hashes) == 1 && hashes[oldHash] == 0 && ready == 2 && len(items) == 2,
			fmt.Sprintf("%d members, %d running, hashes %v (old %s)", len(items), ready, hashes, oldHash)
	})
	c := env.bridgeClient(t, ns)
	sb, err := c.Claim(ctx, "python")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(ctx, `python3 -c 'import os; print(os.environ.get("TEMPLATE_VERSION"))'`)
	if err != nil || string(res.Stdout) != "2\n" || !sb.Warm() {
		t.Errorf("claim after the roll: warm %v, TEMPLATE_VERSION %q, %v", sb.Warm(), res.Stdout, err)
	}
}
