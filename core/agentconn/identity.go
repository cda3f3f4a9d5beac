package agentconn

// The agent's proof of which pod it is (the bridge authenticates the agent):
//
//   - The kubelet mounts a bound service-account token of audience
//     TokenAudience into the agent's container (a projected volume: the
//     kubelet asks the API server for it with a TokenRequest; nothing is
//     stored) and rotates the file. The token names the pod (its name and
//     UID, in the TokenReview's extra) and is useless against the API
//     server (wrong audience).
//   - The agent puts the token into its self-made serving certificate, in
//     the non-critical extension OIDIdentityToken, SEALED: encrypted to the
//     bridge CA's public key (ECDH P-256 + HKDF-SHA256 + AES-256-GCM), with
//     the SHA-256 of the certificate's own public key and the identity as
//     additional data. So
//       - whoever connects to the agent sees only ciphertext (the server's
//         certificate goes to any client in TLS 1.3 before the client's is
//         checked: a plain token there would be anyone's to replay);
//       - the ciphertext opens only for that certificate's key: copied into
//         an impostor's certificate (another key) it does not open, and the
//         victim's own certificate is useless without its key, which signs
//         the handshake.
//   - The bridge (VerifyAgent, in the handshake of every connection) opens
//     the token with the CA key and asks the API server (TokenReview,
//     audience TokenAudience) whose it is: it must be a service account of
//     the sandbox's namespace, for the sandbox's pod (CheckReview).
//     Reviews are cached by the token's hash (Reviews).

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// OIDIdentityToken is the X.509 extension of an agent's serving certificate
// that carries its sealed identity token (identitySeal, DER). The arc is
// under 1.3.6.1.4.1.32473, IANA's example enterprise number (RFC 5612),
// .7070 (the agent port) .1: sandpod has no enterprise number of its own;
// if it gets one, agents and bridges must change together (a bridge refuses
// an agent without this extension).
var OIDIdentityToken = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 32473, 7070, 1}

// Bounds of what the bridge opens: a bound service-account token is about
// 1 KiB.
const (
	maxTokenLen    = 16 << 10
	sealVersion    = 1
	sealInfo       = "sandpod agent identity token v1"
	reviewCacheTTL = 10 * time.Minute
	reviewCacheMax = 10000
)

// NotAuthenticated starts every error of the bridge's check of an agent, so
// that a failed handshake, which reaches the bridge's call only as text in
// gRPC's "authentication handshake failed", can be told apart from an agent
// that is down (the bridge's reason AGENT_NOT_AUTHENTICATED).
const NotAuthenticated = "agent not authenticated"

func notAuthenticated(format string, a ...any) error {
	return fmt.Errorf(NotAuthenticated+": "+format, a...)
}

type identitySeal struct {
	Version   int
	Ephemeral []byte // uncompressed P-256 point
	Nonce     []byte
	Sealed    []byte // AES-256-GCM of the token
}

// sealKey derives the AES key from the ECDH secret; the ephemeral key and
// the recipient's key are in the salt, as in ECIES.
func sealKey(secret, ephemeral, recipientSPKI []byte) ([]byte, error) {
	salt := append(append([]byte{}, ephemeral...), recipientSPKI...)
	return hkdf.Key(sha256.New, secret, salt, sealInfo, 32)
}

// sealAAD binds a sealed token to the certificate key that carries it and
// to the identity.
func sealAAD(leafSPKI []byte, identity string) []byte {
	sum := sha256.Sum256(leafSPKI)
	return append(append([]byte(sealInfo+"\x00"), sum[:]...), identity...)
}

// SealToken encrypts token to the CA's public key (caSPKI, DER
// SubjectPublicKeyInfo, P-256) for the certificate whose public key is
// leafSPKI and the identity: the extension value of OIDIdentityToken.
func SealToken(caSPKI, leafSPKI []byte, identity string, token []byte) ([]byte, error) {
	pub, err := x509.ParsePKIXPublicKey(caSPKI)
	if err != nil {
		return nil, fmt.Errorf("bridge CA key: %w", err)
	}
	ecPub, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("bridge CA key: not ECDSA")
	}
	recipient, err := ecPub.ECDH()
	if err != nil {
		return nil, fmt.Errorf("bridge CA key: %w", err)
	}
	eph, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	secret, err := eph.ECDH(recipient)
	if err != nil {
		return nil, err
	}
	key, err := sealKey(secret, eph.PublicKey().Bytes(), caSPKI)
	if err != nil {
		return nil, err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return asn1.Marshal(identitySeal{
		Version:   sealVersion,
		Ephemeral: eph.PublicKey().Bytes(),
		Nonce:     nonce,
		Sealed:    gcm.Seal(nil, nonce, token, sealAAD(leafSPKI, identity)),
	})
}

// OpenToken is SealToken's inverse with the CA's private key: it fails for
// a value copied into a certificate with another key or identity.
func OpenToken(ca *ecdsa.PrivateKey, caSPKI, value, leafSPKI []byte, identity string) (string, error) {
	var s identitySeal
	rest, err := asn1.Unmarshal(value, &s)
	if err != nil || len(rest) > 0 {
		return "", notAuthenticated("its identity token extension does not parse")
	}
	if s.Version != sealVersion {
		return "", notAuthenticated("identity token version %d, want %d", s.Version, sealVersion)
	}
	priv, err := ca.ECDH()
	if err != nil {
		return "", err
	}
	eph, err := ecdh.P256().NewPublicKey(s.Ephemeral)
	if err != nil {
		return "", notAuthenticated("identity token: bad ephemeral key")
	}
	secret, err := priv.ECDH(eph)
	if err != nil {
		return "", notAuthenticated("identity token: %v", err)
	}
	key, err := sealKey(secret, s.Ephemeral, caSPKI)
	if err != nil {
		return "", err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return "", err
	}
	if len(s.Nonce) != gcm.NonceSize() || len(s.Sealed) > maxTokenLen+gcm.Overhead() {
		return "", notAuthenticated("identity token: bad sizes")
	}
	token, err := gcm.Open(nil, s.Nonce, s.Sealed, sealAAD(leafSPKI, identity))
	if err != nil {
		return "", notAuthenticated("its identity token was not sealed for this certificate's key and identity (copied from another certificate, or sealed to another bridge CA: a pod made before sandpod was reinstalled, which its controller replaces)")
	}
	if len(token) == 0 {
		return "", notAuthenticated("its identity token is empty")
	}
	return string(token), nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Review is what the API server said of a token (a TokenReview's status).
type Review struct {
	Authenticated bool
	// Audiences the token is valid for, of those asked.
	Audiences []string
	Username  string
	Extra     map[string][]string
	// Error is the API server's error text, if any.
	Error string
}

// ReviewFunc asks the API server about a token, for TokenAudience. An error
// is a failed request (the API server unreachable), not a refused token.
type ReviewFunc func(ctx context.Context, token string) (Review, error)

// Expect is whom the agent at a sandbox's address must be: the sandbox's
// pod, a service account of the sandbox's namespace.
type Expect struct {
	Identity  string
	Namespace string
	PodName   string
	// PodUID, when known, must match too.
	PodUID string
}

// TokenReview extra keys of a bound service-account token (set by the API
// server from the token's claims).
const (
	ExtraPodName = "authentication.kubernetes.io/pod-name"
	ExtraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// CheckReview decides whether a review proves want: authenticated, for
// audience, a service account of want.Namespace, bound to want.PodName
// (and want.PodUID when set). A pure function.
func CheckReview(r Review, audience string, want Expect) error {
	if !r.Authenticated {
		msg := "the API server does not accept its identity token"
		if r.Error != "" {
			msg += " (" + r.Error + ")"
		}
		return notAuthenticated("%s", msg)
	}
	// An authenticator that does not check audiences says none: refuse.
	if !slices.Contains(r.Audiences, audience) {
		return notAuthenticated("its identity token is not for audience %q (%v)", audience, r.Audiences)
	}
	prefix := "system:serviceaccount:" + want.Namespace + ":"
	if want.Namespace == "" || !strings.HasPrefix(r.Username, prefix) || strings.Contains(r.Username[len(prefix):], ":") || len(r.Username) == len(prefix) {
		return notAuthenticated("its identity token is %q's, not a service account of namespace %q", r.Username, want.Namespace)
	}
	if got := r.Extra[ExtraPodName]; want.PodName == "" || len(got) != 1 || got[0] != want.PodName {
		return notAuthenticated("its identity token is pod %v's, not pod %s/%s's", got, want.Namespace, want.PodName)
	}
	if want.PodUID != "" {
		if got := r.Extra[ExtraPodUID]; len(got) != 1 || got[0] != want.PodUID {
			return notAuthenticated("its identity token is pod UID %v's, not %s", got, want.PodUID)
		}
	}
	return nil
}

// Reviews asks the API server about tokens and keeps what it said: of a
// token it accepted for the audience, until the token expires (at most
// reviewCacheTTL), so one TokenReview per agent pod per token, not per
// connection; of one it refused, for refusedTTL, so that an impostor the
// bridge keeps reconnecting to (gRPC's back-off is at most 2 s) costs the
// API server a review now and then, not one per attempt. What is kept is
// the API server's answer, not the decision: CheckReview runs on every
// handshake, for the sandbox dialled. A failed request is not kept (fail
// closed, ask again next time).
type Reviews struct {
	review   ReviewFunc
	audience string
	now      func() time.Time

	mu     sync.Mutex
	byHash map[[32]byte]cachedReview
}

// refusedTTL is how long a token the API server refused stays refused.
const refusedTTL = 30 * time.Second

type cachedReview struct {
	r       Review
	expires time.Time
}

// NewReviews uses review for audience; now is time.Now but for tests.
func NewReviews(review ReviewFunc, audience string, now func() time.Time) *Reviews {
	if now == nil {
		now = time.Now
	}
	return &Reviews{review: review, audience: audience, now: now, byHash: map[[32]byte]cachedReview{}}
}

// Check says whether token proves want (CheckReview), asking the API server
// unless a review of the token is kept.
func (rs *Reviews) Check(ctx context.Context, token string, want Expect) error {
	key := sha256.Sum256([]byte(token))
	now := rs.now()
	rs.mu.Lock()
	c, ok := rs.byHash[key]
	rs.mu.Unlock()
	if ok && now.Before(c.expires) {
		return CheckReview(c.r, rs.audience, want)
	}
	r, err := rs.review(ctx, token)
	if err != nil {
		return notAuthenticated("could not review its identity token: %v", err)
	}
	expires := now.Add(refusedTTL)
	if r.Authenticated && slices.Contains(r.Audiences, rs.audience) {
		expires = now.Add(reviewCacheTTL)
		if exp, ok := tokenExpiry(token); ok && exp.Before(expires) {
			expires = exp
		}
	}
	rs.mu.Lock()
	if len(rs.byHash) >= reviewCacheMax {
		rs.byHash = map[[32]byte]cachedReview{}
	}
	rs.byHash[key] = cachedReview{r: r, expires: expires}
	rs.mu.Unlock()
	return CheckReview(r, rs.audience, want)
}

// tokenExpiry reads a JWT's exp claim without checking anything: it is only
// used for a token the API server has just accepted (so the claim is the
// issuer's), to keep its review no longer than the token lives.
func tokenExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}, false
	}
	return time.Unix(claims.Exp, 0), true
}
