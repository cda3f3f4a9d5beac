// The agents' TLS on Kubernetes: how the bridge and the agents of Kubernetes sandboxes
// authenticate each other without any per-sandbox credential:
//
//   - The controller owns one CA (NewCA; kept in the Secret
//     sandpod-agent-ca of its own namespace) and gives every agent the
//     SHA-256 of the CA's public key (Pin) as an argument in its pod spec:
//     public information, nothing a sandbox could use to call its agent.
//
//   - The bridge reads the CA and mints itself a short-lived client
//     certificate (MintClient), presented with the CA certificate.
//
//   - The agent makes its own serving certificate in memory at start
//     (NewServing) and admits only a handshake whose client certificate
//     chains to a CA certificate with the pinned key (ServerConfig), and
//     whose SNI names the agent's sandbox (Identity).
//
//   - The agent authenticates itself to the bridge by its pod (identity.go):
//     its certificate carries the kubelet's bound service-account token of
//     the pod (audience sandpod.dev/agent), sealed to the CA's public key
//     and to the certificate's own key; the bridge opens it and asks the
//     API server (TokenReview) whether it is the sandbox's pod's
//     (AgentCheck, in the handshake of every connection).
//
// The agent's serving certificate is self-signed and not checked against
// any CA: its name catches a stale pod IP now held by another sandbox's
// agent early (VerifyAgent), its sealed token proves the pod.

package agentconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"regexp"
	"strings"
	"time"
)

// Validity of what this package makes.
const (
	// CAValidity is long: agents keep the pin of the CA for their whole life
	// and a CA rotation means new pods. A leaked CA key is handled by
	// deleting the Secret and restarting the controller (docs/security.md).
	CAValidity = 20 * 365 * 24 * time.Hour
	// ClientValidity is the bridge's client certificate's life; the bridge
	// mints a new one when a third of it is left.
	ClientValidity = 24 * time.Hour
	// skew is how far back NotBefore goes, for clocks of nodes that differ.
	skew = time.Hour
)

// PEM keys of the CA Secret.
const (
	SecretKeyCACert = "ca.crt"
	SecretKeyCAKey  = "ca.key"
)

// CA is a certificate authority: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// NewCA makes an ECDSA P-256 CA that may sign client certificates only.
func NewCA(now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sandpod bridge CA", Organization: []string{"sandpod"}},
		NotBefore:             now.Add(-skew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs leaves only
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// PEM encodes the CA as the Secret's ca.crt and ca.key.
func (ca *CA) PEM() (certPEM, keyPEM []byte, err error) {
	keyDER, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// ParseCA reads a CA from its PEM certificate and key, and checks that they
// belong together and that the certificate is a CA.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("agent CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("agent CA: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("agent CA: the key is not ECDSA")
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, errors.New("agent CA: the certificate is not a CA")
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Pin is the hex SHA-256 of a certificate's SubjectPublicKeyInfo: what the
// agents trust. It names the key, not the certificate, so it is public.
func Pin(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

var pinPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidPin says whether s is a pin as Pin makes it.
func ValidPin(s string) bool { return pinPattern.MatchString(s) }

// Identity is the name an agent answers to: the SNI the bridge sends and the
// DNS name of the agent's certificate. It comes from the sandbox's UID, so a
// sandbox deleted and made again under its name is another identity. A
// UID is lowercase hex and dashes (36 characters), so "sb-" + UID is a
// valid DNS label.
func Identity(uid string) string { return "sb-" + strings.ToLower(uid) }

var labelPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidIdentity says whether id is a DNS label (RFC 1123), as Identity makes
// them from a UID.
func ValidIdentity(id string) bool { return labelPattern.MatchString(id) }

// MintClient makes a client certificate for the bridge, signed by ca, valid
// for ClientValidity from now. The chain is [leaf, CA]: the agents hold only
// the CA's pin, so the CA certificate must travel with the leaf.
func MintClient(ca *CA, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "sandpod bridge", Organization: []string{"sandpod"}},
		NotBefore:    now.Add(-skew),
		NotAfter:     now.Add(ClientValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// NewServing makes an agent's own serving certificate for identity:
// self-signed, ECDSA P-256, in memory only, without an identity token (a
// bridge refuses it: tests and the red team's impostors).
func NewServing(identity string, now time.Time) (tls.Certificate, error) {
	key, err := NewServingKey()
	if err != nil {
		return tls.Certificate{}, err
	}
	return ServingCert(key, identity, nil, nil, now)
}

// NewServingKey makes an agent's key: it lives in the agent's memory only,
// for the agent's life, and signs its handshakes; ServingCert makes the
// certificates for it.
func NewServingKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// ServingCert makes an agent's self-signed certificate for key, naming
// identity (so that a bridge that reached the wrong agent notices early).
// With a token, it carries the token sealed to the bridge CA's public key
// caSPKI and to this certificate's key (OIDIdentityToken, SealToken): the
// agent's proof of its pod.
func ServingCert(key *ecdsa.PrivateKey, identity string, caSPKI, token []byte, now time.Time) (tls.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: identity, Organization: []string{"sandpod agent"}},
		DNSNames:     []string{identity},
		NotBefore:    now.Add(-skew),
		NotAfter:     now.Add(CAValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if len(token) > 0 {
		spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return tls.Certificate{}, err
		}
		sealed, err := SealToken(caSPKI, spki, identity, token)
		if err != nil {
			return tls.Certificate{}, err
		}
		tmpl.ExtraExtensions = []pkix.Extension{{Id: OIDIdentityToken, Value: sealed}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// PublicKey is the base64 DER SubjectPublicKeyInfo of a certificate: what
// agents get of the bridge CA besides its pin (Pin is its SHA-256), to seal
// their identity token to. Public, like the pin.
func PublicKey(cert *x509.Certificate) string {
	return base64.StdEncoding.EncodeToString(cert.RawSubjectPublicKeyInfo)
}

// ParsePublicKey decodes PublicKey's text and checks it against pin.
func ParsePublicKey(text, pin string) ([]byte, error) {
	spki, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("bridge CA key: %w", err)
	}
	sum := sha256.Sum256(spki)
	if hex.EncodeToString(sum[:]) != pin {
		return nil, errors.New("bridge CA key: it is not the key of the pin")
	}
	if _, err := x509.ParsePKIXPublicKey(spki); err != nil {
		return nil, fmt.Errorf("bridge CA key: %w", err)
	}
	return spki, nil
}

// CASecretName is the Secret, in the controller's namespace, that holds the
// bridge CA: made by the controller, read by the bridge, never anywhere else.
const CASecretName = "sandpod-agent-ca"

// DefaultNamespace is sandpod's own namespace when no flag names it.
const DefaultNamespace = "sandpod-system"

// serviceAccountNamespace is where a pod's service account namespace is
// mounted (as controller-runtime's leader election reads it).
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// OwnNamespace is the namespace of the CA Secret: flag if set, else
// $POD_NAMESPACE, else the namespace of the pod's service account, else
// DefaultNamespace.
func OwnNamespace(flag string) string {
	if flag != "" {
		return flag
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return DefaultNamespace
}
