package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/agentconn/kubeca"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

const impostorScript = `
import os, socket, ssl, threading, time
while not os.path.exists("/tmp/imp/ready"):
    time.sleep(0.2)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.minimum_version = ssl.TLSVersion.TLSv1_3
ctx.load_cert_chain("/tmp/imp/tls.crt", "/tmp/imp/tls.key")
ctx.set_alpn_protocols(["h2"])
def cb(sock, name, c):
    print("SNI", name, flush=True)
ctx.sni_callback = cb
ls = socket.socket(socket.AF_INET)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("0.0.0.0", 7070)); ls.listen(16)
def serve(c, addr):
    try:
        s = ctx.wrap_socket(c, server_side=True)
        print("TLS-OK from", addr[0], "alpn", s.selected_alpn_protocol(), flush=True)
        s.sendall(bytes.fromhex("000000040000000000"))
        got = b""
        acked = False
        s.settimeout(20)
        while len(got) < 65536:
            d = s.recv(4096)
            if not d: break
            got += d
            if not acked:
                s.sendall(bytes.fromhex("000000040100000000"))
                acked = True
            if b"REDTEAM-MARKER" in got:
                i = got.index(b"REDTEAM-MARKER")
                print("MARKER-SEEN", got[i:i+40], flush=True)
                break
    except Exception as e:
        print("ERR", repr(e), flush=True)
while True:
    c, a = ls.accept()
    threading.Thread(target=serve, args=(c, a), daemon=True).start()
`

// TestRedteamExternalIPServiceRefused (red team, finding 1, fixed): a
// tenant who may create a Service in its own namespace gives it
// spec.externalIPs = another tenant's sandbox pod IP, port 7070
// (CVE-2020-8554: kube-proxy DNATs that address for every pod and the node,
// the bridge included, unless the DenyServiceExternalIPs admission plugin is
// on), selecting its own pod, a fake agent. The impostor here is as strong
// as a tenant gets: its certificate names the victim's identity and carries
// a real bound token of its own pod for the agents' audience (what the
// kubelet projects into any pod that asks), sealed correctly to the bridge
// CA's public key. The bridge must refuse it in the handshake (the API
// server says the token is another namespace's pod): the victim's call fails
// AGENT_NOT_AUTHENTICATED and the impostor never sees the call. With the
// Service gone, the victim's calls work again.
func TestRedteamExternalIPServiceRefused(t *testing.T) {
	env := Setup(t)
	victimNS, attackerNS := env.Namespace(t), env.Namespace(t)
	env.Apply(t, Template(victimNS, "python", PythonImage))
	_, victim := env.Claim(t, victimNS, "v", "python")
	victimIP := victim.Status.PodIPs[0]
	victimID := agentconn.Identity(string(victim.UID))
	ctx := Context(t)

	// The attacker's fake agent, a plain pod in its own namespace.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: attackerNS, Name: "imp", Labels: map[string]string{"app": "imp"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "imp", Image: PythonImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"python3", "-u", "-c", impostorScript}}},
		}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "the impostor pod running", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: attackerNS, Name: "imp"}, pod)
		return err == nil && pod.Status.Phase == corev1.PodRunning, fmt.Sprint(err, pod.Status.Phase)
	})
	// A bound token of the impostor's pod for the agents' audience: the
	// TokenRequest the kubelet makes for a projected volume.
	secs := int64(v1alpha1.AgentIdentityTokenSeconds)
	var token string
	env.Eventually(t, "a token of the impostor's pod", func() (bool, string) {
		tr, err := env.Clientset.CoreV1().ServiceAccounts(attackerNS).CreateToken(ctx, "default", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			Audiences: []string{v1alpha1.AgentTokenAudience}, ExpirationSeconds: &secs,
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		token = tr.Status.Token
		return true, ""
	})
	ca := env.AgentCA(t)
	key, err := agentconn.NewServingKey()
	if err != nil {
		t.Fatal(err)
	}
	serving, err := agentconn.ServingCert(key, victimID, ca.Cert.RawSubjectPublicKeyInfo, []byte(token), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(serving.PrivateKey.(*ecdsa.PrivateKey))
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serving.Certificate[0]}))
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if _, err := env.RunKubectl(ctx, "exec", "-n", attackerNS, "imp", "--", "python3", "-c",
		`import os, sys; os.makedirs("/tmp/imp", exist_ok=True); open("/tmp/imp/tls.crt", "w").write(sys.argv[1]); open("/tmp/imp/tls.key", "w").write(sys.argv[2]); open("/tmp/imp/ready", "w").close()`,
		certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: attackerNS, Name: "hijack"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "imp"}, ExternalIPs: []string{victimIP},
			Ports: []corev1.ServicePort{{Name: "agent", Port: v1alpha1.AgentPort, TargetPort: intstr.FromInt32(v1alpha1.AgentPort), Protocol: corev1.ProtocolTCP}}}}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatalf("a tenant's Service with externalIPs was refused (the cluster has a guard; this test needs none): %v", err)
	}
	// The hijack is in effect once the node's own connections to the
	// victim's agent address reach the impostor (its key, not the agent's):
	// without it this test would prove nothing.
	target := net.JoinHostPort(victimIP, fmt.Sprint(v1alpha1.AgentPort))
	servedBy := func() (string, error) {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", target, &tls.Config{MinVersion: tls.VersionTLS13, ServerName: victimID, InsecureSkipVerify: true, //nolint:gosec // only looking at who answers
			NextProtos: []string{"h2"}})
		if err != nil {
			return "", err
		}
		defer c.Close()
		if string(c.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo) == string(serving.Leaf.RawSubjectPublicKeyInfo) {
			return "impostor", nil
		}
		return "agent", nil
	}
	env.Eventually(t, "the victim's agent address served by the impostor (kube-proxy)", func() (bool, string) {
		who, err := servedBy()
		return who == "impostor", fmt.Sprint(who, err)
	})

	// The victim's call through the bridge.
	c := env.bridgeClient(t, victimNS)
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	res, err := c.Sandbox(victim.Name).Run(callCtx, "echo REDTEAM-MARKER-secret-$((6*7))")
	cancel()
	t.Logf("victim's call during the hijack: %v %v", res, err)
	var serr *sandpod.Error
	if err == nil || !errors.As(err, &serr) || serr.Reason != string(errinfo.ReasonAgentNotAuthenticated) {
		t.Errorf("the victim's call during the hijack: %v, want UNAVAILABLE %s", err, errinfo.ReasonAgentNotAuthenticated)
	} else if !strings.Contains(serr.Message, attackerNS) {
		t.Errorf("the refusal does not say whose token it was: %s", serr.Message)
	}
	logs, lerr := env.RunKubectl(ctx, "logs", "-n", attackerNS, "imp")
	t.Logf("impostor log (%v):\n%s", lerr, logs)
	if strings.Contains(logs, "MARKER-SEEN") {
		t.Errorf("the bridge sent the victim's exec to another tenant's pod (Service externalIPs %s)", victimIP)
	}
	if !strings.Contains(logs, "SNI "+victimID) {
		t.Errorf("the impostor never saw the bridge's handshake: the test proves nothing")
	}

	// Without the Service, the victim's agent answers again.
	if err := env.Client.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "the victim's exec through the bridge after the Service is gone", func() (bool, string) {
		callCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err := c.Sandbox(victim.Name).Run(callCtx, "echo ok-$((6*7))")
		return err == nil && strings.TrimSpace(string(res.Stdout)) == "ok-42", fmt.Sprint(res, err)
	})

	// The victim's own code can read its pod's identity token. It is
	// worth nothing to the API server (audience sandpod.dev/agent), and to
	// the bridge it proves only this very pod.
	res, err = c.Sandbox(victim.Name).Run(ctx, "cat "+v1alpha1.AgentIdentityTokenPath)
	if err != nil || len(strings.TrimSpace(string(res.Stdout))) == 0 {
		t.Fatalf("read the identity token inside the sandbox: %v %v", res, err)
	}
	own := strings.TrimSpace(string(res.Stdout))
	asToken := rest.CopyConfig(env.Config)
	asToken.BearerToken, asToken.BearerTokenFile = own, ""
	asToken.TLSClientConfig.CertFile, asToken.TLSClientConfig.KeyFile = "", ""
	asToken.TLSClientConfig.CertData, asToken.TLSClientConfig.KeyData = nil, nil
	cs, err := kubernetes.NewForConfig(asToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(victimNS).List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("the API server with the agent's identity token: %v, want 401 Unauthorized", err)
	}
	review, err := kubeca.ReviewAgentToken(env.Client)(ctx, own)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentconn.CheckReview(review, v1alpha1.AgentTokenAudience, agentconn.Expect{Identity: victimID, Namespace: victimNS, PodName: victim.Name}); err != nil {
		t.Errorf("the victim pod's own token does not prove the victim's pod: %v (%+v)", err, review)
	}
	if err := agentconn.CheckReview(review, v1alpha1.AgentTokenAudience, agentconn.Expect{Identity: victimID, Namespace: attackerNS, PodName: victim.Name}); err == nil {
		t.Error("the victim pod's token proves a pod of that name in another namespace")
	}
}
