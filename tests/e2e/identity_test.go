package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
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

// TestAgentRefusesCallersWithoutTheBridgeCA: the agent in a pod answers
// only a caller with a client certificate of the agents' bridge CA that
// asks for its own sandbox's identity, so whatever reaches port 7070 of a
// sandbox (here the node itself, which NetworkPolicy does not stop; on a
// cluster without an enforcing CNI, any pod) cannot run anything there: not
// in plaintext, not without a client certificate, not with one of another
// CA, and not with the bridge's own certificate for another sandbox (as the
// bridge would after that sandbox's pod IP was reused). Inside a sandbox
// there is no credential: no Secret mounted, nothing in the agent's
// arguments but the CA's public pin, and the sandbox's own code cannot call
// its agent over loopback. The bridge's path works (TestBridge*).
func TestAgentRefusesCallersWithoutTheBridgeCA(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 2))
	env.WaitPoolReady(t, ns, "python", 2)
	_, a := env.Claim(t, ns, "a", "python")
	_, b := env.Claim(t, ns, "b", "python")
	ctx := Context(t)
	agentA, agentB := env.Agent(t, a), env.Agent(t, b)
	if a.Status.AgentAuth != v1alpha1.AgentAuthClientCertificate {
		t.Errorf("status.agentAuth of a = %q, want %q", a.Status.AgentAuth, v1alpha1.AgentAuthClientCertificate)
	}
	if _, err := agentB.Client.ListFiles(ctx, &sandpodv1.ListFilesRequest{Path: "."}); err != nil {
		t.Fatalf("b's agent with the bridge's certificate for b: %v", err)
	}

	ca := env.AgentCA(t)
	bridgeCert, err := agentconn.MintClient(ca, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _ := agentconn.NewCA(time.Now())
	otherCert, _ := agentconn.MintClient(otherCA, time.Now())
	tlsWith := func(sandbox *v1alpha1.Sandbox, cert *tls.Certificate) credentials.TransportCredentials {
		cfg := env.AgentTLS(t, sandbox)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		}
		return credentials.NewTLS(cfg)
	}
	// a's identity at b's address: what the bridge sends to a stale pod IP.
	aAtB := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: agentconn.Identity(string(a.UID)), InsecureSkipVerify: true, //nolint:gosec // the agent's refusal is under test
		Certificates: []tls.Certificate{bridgeCert}}
	target := net.JoinHostPort(b.Status.PodIPs[0], fmt.Sprint(v1alpha1.AgentPort))
	for what, creds := range map[string]credentials.TransportCredentials{
		"plaintext":                      insecure.NewCredentials(),
		"no client certificate":          tlsWith(b, nil),
		"another CA's certificate":       tlsWith(b, &otherCert),
		"the bridge's certificate for a": credentials.NewTLS(aAtB),
	} {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = sandpodv1.NewAgentServiceClient(conn).ListFiles(callCtx, &sandpodv1.ListFilesRequest{Path: "."})
		cancel()
		_ = conn.Close()
		if err == nil {
			t.Errorf("b's agent answered a caller with %s", what)
		}
	}

	// Inside a: no Secret mounted, no key in the agent's arguments, and its
	// own code gets no answer from its agent on loopback without the
	// bridge's certificate (the handshake fails once the agent has seen
	// there is no client certificate). What it can read is its pod's
	// identity token, for the agents' audience only: it proves "this pod"
	// (the bridge's check, TestRedteam*), nothing to the API server.
	res, err := agentA.Shell(ctx, `ls -A /sandpod; test -e /sandpod/secret && echo SECRET-DIR; env | grep -ci secret`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(res.Stdout) != "bin\nidentity\n0" {
		t.Errorf("a's pod shows more than the agent's binary and identity token, or a secret in its environment: %q", res.Stdout)
	}
	pod := env.Pod(t, a)
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("a's pod mounts %s", v.Name)
		}
		if p := v.Projected; p != nil && (len(p.Sources) != 1 || p.Sources[0].ServiceAccountToken == nil || p.Sources[0].ServiceAccountToken.Audience != v1alpha1.AgentTokenAudience) {
			t.Errorf("a's pod mounts %s: want only the agents' identity token projected", v.Name)
		}
	}
	if cmd := strings.Join(pod.Spec.Containers[0].Command, " "); !strings.Contains(cmd, "--bridge-ca-sha256 "+agentconn.Pin(ca.Cert)) || strings.Contains(cmd, "secret") {
		t.Errorf("a's agent arguments %q: want the CA pin and no secret", cmd)
	}
	probe := `python3 - <<'EOF'
import socket, ssl
c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
c.check_hostname = False
c.verify_mode = ssl.CERT_NONE
try:
    s = c.wrap_socket(socket.create_connection(("127.0.0.1", 7070), timeout=10), server_hostname="` + agentconn.Identity(string(a.UID)) + `")
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes.fromhex("000000040000000000"))
    print("ANSWERED" if s.recv(64) else "CLOSED")
except (ssl.SSLError, OSError) as e:
    print("REFUSED", e)
EOF`
	res, err = agentA.Shell(ctx, probe)
	if err != nil || strings.Contains(res.Stdout, "ANSWERED") || !strings.Contains(res.Stdout+res.Stderr, "REFUSED") && !strings.Contains(res.Stdout, "CLOSED") {
		t.Errorf("a's own code calling its agent on loopback: %q %q (%v), want refused", res.Stdout, res.Stderr, err)
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
