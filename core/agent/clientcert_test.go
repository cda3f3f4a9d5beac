package agent

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// An agent in the bridge-CA mode, on a real gRPC server on loopback, admits
// the bridge's client certificate for its own identity and nothing else:
// no client certificate, one of another CA, a self-signed one claiming to
// be the CA, an expired one, another sandbox's identity, plaintext.
func TestAgentAdmitsOnlyTheBridgeCA(t *testing.T) {
	const uid = "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"
	ca, err := agentconn.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The agent's identity token, as the kubelet projects it; the fake
	// review below says it is pod t/sb-a's (the real API server's answer is
	// the e2e tests').
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("token-of-sb-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serverTLS, err := PinnedTLS(agentconn.Pin(ca.Cert), agentconn.PublicKey(ca.Cert), uid, tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	reviews := agentconn.NewReviews(func(_ context.Context, token string) (agentconn.Review, error) {
		if token != "token-of-sb-a" {
			return agentconn.Review{}, nil
		}
		return agentconn.Review{Authenticated: true, Audiences: []string{"aud"}, Username: "system:serviceaccount:t:default",
			Extra: map[string][]string{agentconn.ExtraPodName: {"sb-a"}}}, nil
	}, "aud", nil)
	check := &agentconn.AgentCheck{CA: ca, Reviews: reviews}
	addr := serveAgentTLS(t, Config{Sandbox: "sb-a", Root: t.TempDir(), ClientCertAuth: true}, serverTLS)

	call := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = sandpodv1.NewAgentServiceClient(conn).GetAgentInfo(ctx, &sandpodv1.GetAgentInfoRequest{})
		return err
	}
	with := func(id string, cert *tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(agentconn.ClientConfig(agentconn.Expect{Identity: id, Namespace: "t", PodName: "sb-a"}, func() (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil // what a client without one sends
			}
			return cert, nil
		}, check))
	}
	id := agentconn.Identity(uid)
	bridge, err := agentconn.NewClientCerts(ca, nil).Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := call(with(id, bridge)); err != nil {
		t.Fatalf("the bridge's certificate, right identity: %v", err)
	}

	other, _ := agentconn.NewCA(time.Now())
	fromOther, _ := agentconn.MintClient(other, time.Now())
	expired, _ := agentconn.MintClient(ca, time.Now().Add(-2*agentconn.ClientValidity))
	// Self-signed, the CA's own name, but its own key: an impostor CA
	// sending a leaf it signed along with itself.
	impostor, _ := agentconn.NewCA(time.Now())
	impostor.Cert.Subject = ca.Cert.Subject
	impostorLeaf, _ := agentconn.MintClient(impostor, time.Now())
	// The real CA certificate sent along with a leaf of another CA.
	mixed := fromOther
	mixed.Certificate = [][]byte{fromOther.Certificate[0], ca.Cert.Raw}
	for _, c := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"no client certificate", with(id, nil)},
		{"another CA's certificate", with(id, &fromOther)},
		{"an impostor CA's certificate", with(id, &impostorLeaf)},
		{"another CA's leaf with the real CA certificate", with(id, &mixed)},
		{"an expired certificate", with(id, &expired)},
		{"another sandbox's identity", with(agentconn.Identity("1b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"), bridge)},
		{"plaintext", insecure.NewCredentials()},
	} {
		if err := call(c.creds); err == nil {
			t.Errorf("%s reached the agent", c.name)
		}
	}
}

// An agent without an identity token (or with another pod's) is refused by
// the bridge's side of the handshake, before the bridge sends anything.
func TestBridgeRefusesAgentWithoutItsToken(t *testing.T) {
	const uid = "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"
	ca, _ := agentconn.NewCA(time.Now())
	noToken, err := PinnedTLS(agentconn.Pin(ca.Cert), "", uid, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := serveAgentTLS(t, Config{Sandbox: "sb-a", Root: t.TempDir(), ClientCertAuth: true}, noToken)
	reviewed := 0
	check := &agentconn.AgentCheck{CA: ca, Reviews: agentconn.NewReviews(func(context.Context, string) (agentconn.Review, error) {
		reviewed++
		return agentconn.Review{}, nil
	}, "aud", nil)}
	cfg := agentconn.ClientConfig(agentconn.Expect{Identity: agentconn.Identity(uid), Namespace: "t", PodName: "sb-a"}, agentconn.NewClientCerts(ca, nil).Get, check)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = sandpodv1.NewAgentServiceClient(conn).GetAgentInfo(ctx, &sandpodv1.GetAgentInfoRequest{})
	if err == nil || !strings.Contains(err.Error(), agentconn.NotAuthenticated) {
		t.Fatalf("an agent without a token: %v, want %q", err, agentconn.NotAuthenticated)
	}
	if reviewed != 0 {
		t.Errorf("no token, yet %d reviews", reviewed)
	}
}

// The agent refuses to start in the bridge-CA mode with a pin or UID it
// cannot use, rather than serving without checks.
func TestPinnedTLSRefusesBadFlags(t *testing.T) {
	pin := "0000000000000000000000000000000000000000000000000000000000000000"
	if _, err := PinnedTLS(pin, "", "", ""); err == nil {
		t.Error("no sandbox UID was accepted")
	}
	if _, err := PinnedTLS(pin, "", "a.b", ""); err == nil {
		t.Error("a UID that makes no DNS label was accepted")
	}
	if _, err := PinnedTLS("zz", "", "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44", ""); err == nil {
		t.Error("a malformed pin was accepted")
	}
	ca, _ := agentconn.NewCA(time.Now())
	other, _ := agentconn.NewCA(time.Now())
	token := filepath.Join(t.TempDir(), "token")
	if _, err := PinnedTLS(agentconn.Pin(ca.Cert), agentconn.PublicKey(other.Cert), "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44", token); err == nil {
		t.Error("a CA key that is not the pin's was accepted")
	}
	if _, err := PinnedTLS(agentconn.Pin(ca.Cert), agentconn.PublicKey(ca.Cert), "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44", token); err == nil {
		t.Error("a missing token file was accepted")
	}
}
