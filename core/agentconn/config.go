package agentconn

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
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
	return ServerConfigFunc(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &serving, nil }, identity, pin, now)
}

// ServerConfigFunc is ServerConfig with the certificate of each handshake
// from get (ServingCerts.Get: it follows the identity token's rotation).
func ServerConfigFunc(get func(*tls.ClientHelloInfo) (*tls.Certificate, error), identity, pin string, now func() time.Time) (*tls.Config, error) {
	if !ValidPin(pin) {
		return nil, fmt.Errorf("agent TLS: bridge CA pin %q: want 64 lowercase hex digits (SHA-256)", pin)
	}
	if !ValidIdentity(identity) {
		return nil, fmt.Errorf("agent TLS: identity %q is not a DNS label", identity)
	}
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		MaxVersion:             tls.VersionTLS13,
		GetCertificate:         get,
		ClientAuth:             tls.RequireAnyClientCert, // verified by VerifyClient, against the pin
		SessionTicketsDisabled: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return VerifyClient(cs.PeerCertificates, cs.ServerName, identity, pin, now())
		},
	}, nil
}

// tokenRecheck is how often the agent looks at its token file again: the
// kubelet writes a new token when 80% of the old one's life has passed, so
// the file's token has minutes left, and a few seconds of lag cost nothing.
const tokenRecheck = 5 * time.Second

// ServingCerts is an agent's serving certificate carrying the current
// identity token of tokenFile (the kubelet's projected token, which it
// rotates): the key stays, the certificate is made anew when the token
// changes, looked at most every tokenRecheck, on a handshake.
type ServingCerts struct {
	key       *ecdsa.PrivateKey
	identity  string
	caSPKI    []byte
	tokenFile string
	now       func() time.Time

	mu     sync.Mutex
	cur    *tls.Certificate
	token  []byte
	readAt time.Time
}

// NewServingCerts reads tokenFile and makes the first certificate; an error
// if the file cannot be read or is empty (the kubelet writes it before the
// container starts).
func NewServingCerts(identity string, caSPKI []byte, tokenFile string, now func() time.Time) (*ServingCerts, error) {
	if now == nil {
		now = time.Now
	}
	key, err := NewServingKey()
	if err != nil {
		return nil, err
	}
	s := &ServingCerts{key: key, identity: identity, caSPKI: caSPKI, tokenFile: tokenFile, now: now}
	if _, err := s.refresh(true); err != nil {
		return nil, err
	}
	return s, nil
}

func readToken(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenLen+1))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("identity token file %s is empty", file)
	case len(b) > maxTokenLen:
		return nil, fmt.Errorf("identity token file %s is over %d bytes", file, maxTokenLen)
	}
	return b, nil
}

// refresh re-reads the token file when due (or force) and re-makes the
// certificate when the token changed. A failed read keeps the current
// certificate (its token may still be valid; the bridge decides).
func (s *ServingCerts) refresh(force bool) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !force && s.cur != nil && now.Sub(s.readAt) < tokenRecheck {
		return s.cur, nil
	}
	s.readAt = now
	token, err := readToken(s.tokenFile)
	if err != nil {
		if s.cur != nil {
			return s.cur, nil
		}
		return nil, fmt.Errorf("agent TLS: %w", err)
	}
	if s.cur != nil && bytes.Equal(token, s.token) {
		return s.cur, nil
	}
	cert, err := ServingCert(s.key, s.identity, s.caSPKI, token, now)
	if err != nil {
		if s.cur != nil {
			return s.cur, nil
		}
		return nil, fmt.Errorf("agent TLS: %w", err)
	}
	s.cur, s.token = &cert, token
	return s.cur, nil
}

// Get is the tls.Config.GetCertificate of the agent.
func (s *ServingCerts) Get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.refresh(false) }

// VerifyAgent is the bridge's first check of an agent's certificate: it
// must name identity and be within its validity. That alone is no
// authentication (anyone can make such a certificate): it catches a dial
// to a pod IP that another sandbox's agent holds now (a deleted pod's IP
// reused). AgentCheck.Verify adds the authentication.
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

// reviewTimeout bounds the TokenReview of one handshake.
const reviewTimeout = 10 * time.Second

// AgentCheck is how the bridge authenticates agents: the bridge CA's key
// opens the identity token in an agent's certificate (OpenToken), and
// Reviews asks the API server whose token it is.
type AgentCheck struct {
	CA      *CA
	Reviews *Reviews
}

// Verify is the bridge's whole check of an agent's certificate chain for
// want, in the handshake: VerifyAgent, then the sealed identity token of
// the leaf must open for the leaf's own key (the handshake proved the agent
// holds it) and the API server must say it is want's pod's (CheckReview).
func (a *AgentCheck) Verify(ctx context.Context, certs []*x509.Certificate, want Expect, now time.Time) error {
	if err := VerifyAgent(certs, want.Identity, now); err != nil {
		return err
	}
	leaf := certs[0]
	var value []byte
	for _, e := range leaf.Extensions {
		if e.Id.Equal(OIDIdentityToken) {
			value = e.Value
			break
		}
	}
	if value == nil {
		return notAuthenticated("its certificate carries no identity token (an agent older than the bridge, or not an agent)")
	}
	token, err := OpenToken(a.CA.Key, a.CA.Cert.RawSubjectPublicKeyInfo, value, leaf.RawSubjectPublicKeyInfo, want.Identity)
	if err != nil {
		return err
	}
	return a.Reviews.Check(ctx, token, want)
}

// ClientConfig is the bridge's TLS to the agent of want, presenting the
// client certificate cert returns, and authenticating the agent with check
// in every handshake (gRPC reconnects on its own: each new connection is
// checked).
func ClientConfig(want Expect, cert func() (*tls.Certificate, error), check *AgentCheck) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: want.Identity, // the SNI the agent checks
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return cert()
		},
		// The agent's certificate is self-signed, made at its start, and
		// pinned by nobody: VerifyConnection authenticates it by the
		// identity token it carries.
		InsecureSkipVerify: true, //nolint:gosec // see AgentCheck.Verify
		VerifyConnection: func(cs tls.ConnectionState) error {
			ctx, cancel := context.WithTimeout(context.Background(), reviewTimeout)
			defer cancel()
			return check.Verify(ctx, cs.PeerCertificates, want, time.Now())
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
