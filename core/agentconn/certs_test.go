package agentconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

func mustCA(t *testing.T, now time.Time) *CA {
	t.Helper()
	ca, err := NewCA(now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// sign makes a certificate from tmpl for a new key, signed by parent's key
// (self-signed when parent is nil), and returns it parsed.
func sign(t *testing.T, tmpl *x509.Certificate, parent *CA) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	issuer, signer := tmpl, key
	if parent != nil {
		issuer, signer = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func leafOf(t *testing.T, c tls.Certificate) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for _, der := range c.Certificate {
		x, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

func TestVerifyClient(t *testing.T) {
	now := time.Now()
	ca, other := mustCA(t, now), mustCA(t, now)
	pin := Pin(ca.Cert)
	id := Identity("0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44")
	good, err := MintClient(ca, now)
	if err != nil {
		t.Fatal(err)
	}
	fromOther, _ := MintClient(other, now)
	// A leaf self-signed under the CA's name, claiming to be a CA.
	impostor, _ := sign(t, &x509.Certificate{
		Subject: ca.Cert.Subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: true,
	}, nil)
	// A leaf of the real CA, valid only as a server certificate.
	serverOnly, _ := sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "x"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	// A leaf signed by another key that sends the real CA certificate along.
	forged, _ := sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "sandpod bridge"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, other)
	g := leafOf(t, good)
	cases := []struct {
		name       string
		certs      []*x509.Certificate
		sni        string
		at         time.Time
		wantErrSub string
	}{
		{"bridge certificate", g, id, now, ""},
		{"no client certificate", nil, id, now, "no client certificate"},
		{"wrong SNI", g, Identity("another-uid"), now, "this agent is"},
		{"no SNI", g, "", now, "this agent is"},
		{"another CA", leafOf(t, fromOther), id, now, "does not come from the bridge CA"},
		{"leaf alone, CA not sent", g[:1], id, now, "does not come from the bridge CA"},
		{"self-signed leaf claiming to be the CA", []*x509.Certificate{impostor}, id, now, "does not come from the bridge CA"},
		{"self-signed impostor beside the real CA", []*x509.Certificate{impostor, ca.Cert}, id, now, "client certificate"},
		{"the CA certificate as the leaf", []*x509.Certificate{ca.Cert, ca.Cert}, id, now, "is the CA itself"},
		{"leaf from another key with the real CA", []*x509.Certificate{forged, ca.Cert}, id, now, "client certificate"},
		{"server-only usage", []*x509.Certificate{serverOnly, ca.Cert}, id, now, "client certificate"},
		{"expired", g, id, now.Add(ClientValidity + time.Minute), "expired"},
		{"not yet valid", g, id, now.Add(-2 * time.Hour), "client certificate"},
		{"too long a chain", []*x509.Certificate{g[0], g[1], g[1], g[1], g[1]}, id, now, "at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := VerifyClient(c.certs, c.sni, id, pin, c.at)
			if c.wantErrSub == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErrSub) {
				t.Fatalf("got %v, want an error with %q", err, c.wantErrSub)
			}
		})
	}
}

func TestCARoundTripAndPin(t *testing.T) {
	ca := mustCA(t, time.Now())
	certPEM, keyPEM, err := ca.PEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if Pin(back.Cert) != Pin(ca.Cert) || !ValidPin(Pin(ca.Cert)) {
		t.Fatalf("pin changed or malformed: %s %s", Pin(back.Cert), Pin(ca.Cert))
	}
	other := mustCA(t, time.Now())
	_, otherKey, _ := other.PEM()
	if _, err := ParseCA(certPEM, otherKey); err == nil {
		t.Error("a CA certificate with another CA's key was accepted")
	}
	leaf, _ := MintClient(ca, time.Now())
	leafPEM, leafKey := pemOf(t, leaf)
	if _, err := ParseCA(leafPEM, leafKey); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("a leaf was accepted as a CA: %v", err)
	}
}

func TestIdentityIsADNSLabel(t *testing.T) {
	for _, uid := range []string{"0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44", "FFFFFFFF-64A2-4C53-9F3E-5D7A2E9C1B44"} {
		if id := Identity(uid); !ValidIdentity(id) {
			t.Errorf("Identity(%q) = %q, not a DNS label", uid, id)
		}
	}
	for _, bad := range []string{"", "a.b", "-x", "x-", strings.Repeat("a", 64), "sb_x"} {
		if ValidIdentity(bad) {
			t.Errorf("ValidIdentity(%q) = true", bad)
		}
	}
}

func TestVerifyAgent(t *testing.T) {
	now := time.Now()
	a, _ := NewServing("sb-a", now)
	if err := VerifyAgent(leafOf(t, a), "sb-a", now); err != nil {
		t.Fatal(err)
	}
	if err := VerifyAgent(leafOf(t, a), "sb-b", now); err == nil {
		t.Error("an agent certificate for sb-a passed for sb-b")
	}
	if err := VerifyAgent(nil, "sb-a", now); err == nil {
		t.Error("no certificate passed")
	}
	if err := VerifyAgent(leafOf(t, a), "sb-a", now.Add(CAValidity+time.Hour)); err == nil {
		t.Error("an expired certificate passed")
	}
}

func TestClientCertsRemintBeforeExpiry(t *testing.T) {
	now := time.Now()
	clock := now
	cc := NewClientCerts(mustCA(t, now), func() time.Time { return clock })
	first, err := cc.Get()
	if err != nil {
		t.Fatal(err)
	}
	clock = now.Add(ClientValidity / 2)
	if again, _ := cc.Get(); again != first {
		t.Error("re-minted with half its life left")
	}
	clock = now.Add(ClientValidity - ClientValidity/4)
	next, _ := cc.Get()
	if next == first || !next.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Error("not re-minted with a quarter of its life left")
	}
}

func TestServerConfigRefusesBadSettings(t *testing.T) {
	serving, _ := NewServing("sb-a", time.Now())
	if _, err := ServerConfig(serving, "sb-a", "abc", time.Now); err == nil {
		t.Error("a short pin was accepted")
	}
	if _, err := ServerConfig(serving, "sb.a", strings.Repeat("a", 64), time.Now); err == nil {
		t.Error("a non-label identity was accepted")
	}
}

func pemOf(t *testing.T, c tls.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	keyDER, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
