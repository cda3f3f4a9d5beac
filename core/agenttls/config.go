package agenttls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"
)

// maxClientChain bounds the certificates a client may present: the bridge
// sends two (leaf and CA).
const maxClientChain = 4

// VerifyClient is the agent's whole check of a handshake, a pure function:
// the SNI must be the agent's own identity, and the client's leaf must
// verify (signature, time, client-auth usage) against a CA certificate the
// client sent whose public key is the pinned one. The CA certificate
// travels in the chain, since the agent holds only its pin; the pin, not
// the chain, is what is trusted:
//   - a leaf is never its own root: a self-signed leaf that copies the
//     CA's name has another key, so no certificate in the chain matches
//     the pin; and a leaf with the CA's own key is refused outright (the
//     bridge never uses the CA key for TLS);
//   - no intermediates: the CA signs leaves only.
func VerifyClient(certs []*x509.Certificate, serverName, identity, pin string, now time.Time) error {
	if identity == "" || serverName != identity {
		return fmt.Errorf("agent TLS: handshake for %q, this agent is %q", serverName, identity)
	}
	if len(certs) == 0 {
		return errors.New("agent TLS: no client certificate")
	}
	if len(certs) > maxClientChain {
		return fmt.Errorf("agent TLS: %d client certificates, at most %d", len(certs), maxClientChain)
	}
	leaf := certs[0]
	if Pin(leaf) == pin {
		return errors.New("agent TLS: the client certificate is the CA itself")
	}
	var root *x509.Certificate
	for _, c := range certs[1:] {
		if Pin(c) == pin {
			root = c
			break
		}
	}
	if root == nil {
		return errors.New("agent TLS: the client certificate does not come from the bridge CA")
	}
	if !root.IsCA || !root.BasicConstraintsValid {
		return errors.New("agent TLS: the pinned key's certificate is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(root)
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return fmt.Errorf("agent TLS: client certificate: %w", err)
	}
	return nil
}

// ServerConfig is an agent's TLS: TLS 1.3 only, its own certificate, and
// VerifyClient on every handshake (no session resumption, so every
// connection is checked afresh, the time included). now is time.Now but
// for tests.
func ServerConfig(serving tls.Certificate, identity, pin string, now func() time.Time) (*tls.Config, error) {
	if !ValidPin(pin) {
		return nil, fmt.Errorf("agent TLS: bridge CA pin %q: want 64 lowercase hex digits (SHA-256)", pin)
	}
	if !ValidIdentity(identity) {
		return nil, fmt.Errorf("agent TLS: identity %q is not a DNS label", identity)
	}
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		MaxVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{serving},
		ClientAuth:             tls.RequireAnyClientCert, // verified by VerifyClient, against the pin
		SessionTicketsDisabled: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return VerifyClient(cs.PeerCertificates, cs.ServerName, identity, pin, now())
		},
	}, nil
}

// VerifyAgent is the bridge's check of an agent's certificate: it must name
// identity and be within its validity. The certificate is self-signed and
// not pinned, so this is no authentication (anyone can make such a
// certificate); it catches a dial to a pod IP that another sandbox's agent
// holds now (a deleted pod's IP reused), which the agent's own SNI check
// refuses too.
func VerifyAgent(certs []*x509.Certificate, identity string, now time.Time) error {
	if len(certs) == 0 {
		return errors.New("agent TLS: the agent sent no certificate")
	}
	leaf := certs[0]
	if err := leaf.VerifyHostname(identity); err != nil {
		return fmt.Errorf("agent TLS: reached another agent: %w", err)
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return errors.New("agent TLS: the agent's certificate is not valid now")
	}
	return nil
}

// ClientConfig is the bridge's TLS to the agent of identity, presenting the
// client certificate cert returns.
func ClientConfig(identity string, cert func() (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: identity, // the SNI the agent checks
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return cert()
		},
		// The agent's certificate is self-signed, made at its start, and
		// pinned by nobody: VerifyConnection checks that it names identity.
		InsecureSkipVerify: true, //nolint:gosec // see VerifyAgent
		VerifyConnection: func(cs tls.ConnectionState) error {
			return VerifyAgent(cs.PeerCertificates, identity, time.Now())
		},
	}
}

// ClientCerts keeps the bridge's client certificate, minting a new one when
// a third of its life is left.
type ClientCerts struct {
	ca  *CA
	now func() time.Time

	mu  sync.Mutex
	cur *tls.Certificate
}

// NewClientCerts mints from ca; now is time.Now but for tests.
func NewClientCerts(ca *CA, now func() time.Time) *ClientCerts {
	if now == nil {
		now = time.Now
	}
	return &ClientCerts{ca: ca, now: now}
}

// Get returns the current client certificate, minted anew when needed.
func (c *ClientCerts) Get() (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.cur != nil && now.Before(c.cur.Leaf.NotAfter.Add(-ClientValidity/3)) {
		return c.cur, nil
	}
	cert, err := MintClient(c.ca, now)
	if err != nil {
		return nil, err
	}
	c.cur = &cert
	return c.cur, nil
}
