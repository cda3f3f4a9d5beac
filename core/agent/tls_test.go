package agent

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The bridge reaches an agent over TLS only with that sandbox's own
// certificate: another sandbox's certificate, or plaintext, get nowhere.
func TestAgentTLSIsPinnedPerSandbox(t *testing.T) {
	dir := t.TempDir()
	cert, key, err := agentconn.NewServingCert("sb-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	serverTLS, err := ServerTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveAgentTLS(t, Config{Sandbox: "sb-a", Root: t.TempDir(), Secret: "s"}, serverTLS)

	call := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), agentconn.SecretMetadataKey, "s"), 5*time.Second)
		defer cancel()
		_, err = sandpodv1.NewAgentServiceClient(conn).GetAgentInfo(ctx, &sandpodv1.GetAgentInfoRequest{})
		return err
	}
	pinned, err := agentconn.ClientTLS(cert, "sb-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := call(credentials.NewTLS(pinned)); err != nil {
		t.Fatalf("with its own certificate pinned: %v", err)
	}
	otherCert, _, err := agentconn.NewServingCert("sb-b", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := agentconn.ClientTLS(otherCert, "sb-b")
	if err := call(credentials.NewTLS(other)); err == nil {
		t.Error("another sandbox's certificate reached this agent")
	}
	wrongName, _ := agentconn.ClientTLS(cert, "sb-b")
	if err := call(credentials.NewTLS(wrongName)); err == nil {
		t.Error("the certificate was accepted for another sandbox's name")
	}
	if err := call(insecure.NewCredentials()); err == nil {
		t.Error("a plaintext call reached a TLS agent")
	}
	if _, err := agentconn.ClientTLS([]byte("not a certificate"), "sb-a"); err == nil {
		t.Error("ClientTLS accepted garbage")
	}
}

// serveAgentTLS serves an agent of cfg over TLS (serverTLS) on a loopback
// port until the test ends, and returns its address.
func serveAgentTLS(t *testing.T, cfg Config, serverTLS *tls.Config) string {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.GRPCServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}
