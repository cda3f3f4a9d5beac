package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir, cn string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	// Write beside, then rename: a reader never sees half a file.
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kb}} {
		if err := os.WriteFile(path+".new", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile, cert
}

func TestTLSWithCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, first := selfSigned(t, dir, "first")
	roots := x509.NewCertPool()
	roots.AddCert(first)
	srv := testserver.Start(t, testserver.Options{
		ExtraArgs:   []string{"--tls-cert", certFile, "--tls-key", keyFile},
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots}))},
	})
	if _, err := srv.Client().ListTemplates(ctx(t), &sandpodv1.ListTemplatesRequest{}); err != nil {
		t.Fatalf("call over TLS: %v", err)
	}
	plain, _ := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer plain.Close()
	if _, err := healthpb.NewHealthClient(plain).Check(ctx(t), &healthpb.HealthCheckRequest{}); err == nil {
		t.Fatal("a plaintext call to a TLS server succeeded")
	}

	// Renew: new files, same paths; new connections get the new certificate.
	_, _, second := selfSigned(t, dir, "second")
	roots2 := x509.NewCertPool()
	roots2.AddCert(second)
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots2})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var p peer.Peer
	if _, err := healthpb.NewHealthClient(conn).Check(ctx(t), &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
		t.Fatalf("after renewal: %v", err)
	}
	state := p.AuthInfo.(credentials.TLSInfo).State
	if got := state.PeerCertificates[0].Subject.CommonName; got != "second" {
		t.Fatalf("server still presents %q after the files changed", got)
	}
}

const teamConfig = `apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: python
  namespace: team-a
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: python
  namespace: team-b
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: unused
`

func TestTokensAreScopedToNamespaces(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Config: teamConfig, Token: "admin"})
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte("# who may do what\nadmin\nteam-a-token team-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Stop(t)
	srv2 := testserver.Start(t, testserver.Options{Config: teamConfig, Token: "team-a-token", ExtraArgs: []string{"--token-file", tokenFile}})
	c := srv2.Client()

	cr, err := c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "python", Namespace: "team-a"})
	if err != nil {
		t.Fatalf("create in its own namespace: %v", err)
	}
	if _, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: cr.GetSandbox().GetName(), Namespace: "team-a", Shell: "true"}, ""); err != nil {
		t.Fatalf("exec in its own namespace: %v", err)
	}
	_, err = c.CreateSandbox(ctx(t), &sandpodv1.CreateSandboxRequest{Template: "python", Namespace: "team-b"})
	wantCode(t, err, codes.PermissionDenied, "team-b")
	wantWhy(t, err, errinfo.ReasonNamespaceForbidden)
	_, err = c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{})
	wantCode(t, err, codes.PermissionDenied, "default")
	wantWhy(t, err, errinfo.ReasonNamespaceForbidden)
	_, err = execIn(t, c, &sandpodv1.ExecStart{Sandbox: cr.GetSandbox().GetName(), Namespace: "team-b", Shell: "true"}, "")
	wantCode(t, err, codes.PermissionDenied, "team-b")
	wantWhy(t, err, errinfo.ReasonNamespaceForbidden)
	err = writeFileNS(t, c, "team-b", cr.GetSandbox().GetName(), "x", []byte("x"))
	wantCode(t, err, codes.PermissionDenied, "team-b")
	wantWhy(t, err, errinfo.ReasonNamespaceForbidden)
}

func writeFileNS(t *testing.T, c sandpodv1.SandboxServiceClient, ns, sandbox, path string, data []byte) error {
	stream, err := c.WriteFile(ctx(t))
	if err != nil {
		return err
	}
	_ = stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Header{Header: &sandpodv1.WriteFileHeader{Sandbox: sandbox, Namespace: ns, Path: path}}})
	_ = stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Data{Data: data}})
	_, err = stream.CloseAndRecv()
	return err
}
