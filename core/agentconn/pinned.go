package agentconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Legacy: pods made by controllers before the bridge CA (certs.go).
// Every such sandbox has its own self-signed certificate (kept in the
// sandbox's Secret next to the agent secret): the agent serves TLS with it
// and the bridge trusts exactly that certificate for that sandbox.
// NewServingCert is kept for the tests of that path; the controller no
// longer makes these.
// No cluster CA is involved, so no other certificate can stand in for an
// agent, and a pod IP reused by another sandbox fails the handshake before
// the secret is sent.

// certValidity is long: the certificate lives as long as its sandbox, which
// may be months, and it is pinned, not checked against a CA.
const certValidity = 10 * 365 * 24 * time.Hour

// NewServingCert makes a self-signed ECDSA P-256 certificate for the agent of
// sandbox name (the DNS name the bridge verifies), in PEM.
func NewServingCert(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"sandpod agent"}},
		DNSNames:              []string{name},
		NotBefore:             now.Add(-time.Hour), // clock skew between nodes
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed and pinned: it is its own root
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// ClientTLS is the bridge's config for one agent: trust certPEM only, for the
// name sandbox.
func ClientTLS(certPEM []byte, sandbox string) (*tls.Config, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("agent certificate: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("agent certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{RootCAs: pool, ServerName: sandbox, MinVersion: tls.VersionTLS13}, nil
}
