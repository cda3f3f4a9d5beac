package agent

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sandpod/sandpod/core/agenttls"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// An agent in the bridge-CA mode, on a real gRPC server on loopback, admits
// the bridge's client certificate for its own identity and nothing else:
// no client certificate, one of another CA, a self-signed one claiming to
// be the CA, an expired one, another sandbox's identity, plaintext.
func TestAgentAdmitsOnlyTheBridgeCA(t *testing.T) {
	const uid = "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"
	ca, err := agenttls.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := PinnedTLS(agenttls.Pin(ca.Cert), uid)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Sandbox: "sb-a", Root: t.TempDir(), ClientCertAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.GRPCServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	call := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(creds))
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
		return credentials.NewTLS(agenttls.ClientConfig(id, func() (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil // what a client without one sends
			}
			return cert, nil
		}))
	}
	id := agenttls.Identity(uid)
	bridge, err := agenttls.NewClientCerts(ca, nil).Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := call(with(id, bridge)); err != nil {
		t.Fatalf("the bridge's certificate, right identity: %v", err)
	}

	other, _ := agenttls.NewCA(time.Now())
	fromOther, _ := agenttls.MintClient(other, time.Now())
	expired, _ := agenttls.MintClient(ca, time.Now().Add(-2*agenttls.ClientValidity))
	// Self-signed, the CA's own name, but its own key: an impostor CA
	// sending a leaf it signed along with itself.
	impostor, _ := agenttls.NewCA(time.Now())
	impostor.Cert.Subject = ca.Cert.Subject
	impostorLeaf, _ := agenttls.MintClient(impostor, time.Now())
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
		{"another sandbox's identity", with(agenttls.Identity("1b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"), bridge)},
		{"plaintext", insecure.NewCredentials()},
	} {
		if err := call(c.creds); err == nil {
			t.Errorf("%s reached the agent", c.name)
		}
	}
}

// The agent refuses to start in the bridge-CA mode with a pin or UID it
// cannot use, rather than serving without checks.
func TestPinnedTLSRefusesBadFlags(t *testing.T) {
	pin := "0000000000000000000000000000000000000000000000000000000000000000"
	if _, err := PinnedTLS(pin, ""); err == nil {
		t.Error("no sandbox UID was accepted")
	}
	if _, err := PinnedTLS(pin, "a.b"); err == nil {
		t.Error("a UID that makes no DNS label was accepted")
	}
	if _, err := PinnedTLS("zz", "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"); err == nil {
		t.Error("a malformed pin was accepted")
	}
}
