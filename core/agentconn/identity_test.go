package agentconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	idUID   = "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"
	testAud = "sandpod.dev/agent"
)

// fakeAPI stands for the API server's TokenReview: tokens it knows, and
// how many reviews it was asked.
type fakeAPI struct {
	tokens map[string]Review
	calls  int
	err    error
}

func (f *fakeAPI) review(_ context.Context, token string) (Review, error) {
	f.calls++
	if f.err != nil {
		return Review{}, f.err
	}
	return f.tokens[token], nil // unknown: not authenticated
}

func podReview(ns, pod, uid string) Review {
	return Review{Authenticated: true, Audiences: []string{testAud}, Username: "system:serviceaccount:" + ns + ":default",
		Extra: map[string][]string{ExtraPodName: {pod}, ExtraPodUID: {uid}}}
}

// jwt makes a token-shaped string with exp (unsigned: only the fake API
// server reads it).
func jwt(exp time.Time, tag string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(fmt.Appendf(nil, `{"exp":%d,"tag":%q}`, exp.Unix(), tag)) + ".sig"
}

func victimExpect() Expect {
	return Expect{Identity: Identity(idUID), Namespace: "team-a", PodName: "sb1"}
}

func agentCert(t *testing.T, ca *CA, identity, token string) tls.Certificate {
	t.Helper()
	key, err := NewServingKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ServingCert(key, identity, ca.Cert.RawSubjectPublicKeyInfo, []byte(token), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tokenExtension(c tls.Certificate) []byte {
	for _, e := range c.Leaf.Extensions {
		if e.Id.Equal(OIDIdentityToken) {
			return e.Value
		}
	}
	return nil
}

func TestSealedTokenOpensOnlyForItsKeyIdentityAndCA(t *testing.T) {
	ca, _ := NewCA(time.Now())
	other, _ := NewCA(time.Now())
	id := Identity(idUID)
	c := agentCert(t, ca, id, "the-token")
	value := tokenExtension(c)
	if value == nil {
		t.Fatal("no identity token extension")
	}
	for _, e := range c.Leaf.Extensions {
		if e.Id.Equal(OIDIdentityToken) && e.Critical {
			t.Error("the extension is critical: other TLS clients would refuse the certificate")
		}
	}
	if strings.Contains(string(c.Leaf.Raw), "the-token") {
		t.Error("the token is in the certificate in the clear")
	}
	leaf := c.Leaf.RawSubjectPublicKeyInfo
	got, err := OpenToken(ca.Key, ca.Cert.RawSubjectPublicKeyInfo, value, leaf, id)
	if err != nil || got != "the-token" {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	impostor := agentCert(t, ca, id, "x")
	for name, open := range map[string]func() (string, error){
		"another certificate's key": func() (string, error) {
			return OpenToken(ca.Key, ca.Cert.RawSubjectPublicKeyInfo, value, impostor.Leaf.RawSubjectPublicKeyInfo, id)
		},
		"another identity": func() (string, error) {
			return OpenToken(ca.Key, ca.Cert.RawSubjectPublicKeyInfo, value, leaf, Identity("1b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"))
		},
		"another CA": func() (string, error) {
			return OpenToken(other.Key, other.Cert.RawSubjectPublicKeyInfo, value, leaf, id)
		},
		"garbage": func() (string, error) {
			return OpenToken(ca.Key, ca.Cert.RawSubjectPublicKeyInfo, []byte{0x30, 0x03, 0x02, 0x01, 0x01}, leaf, id)
		},
	} {
		if tok, err := open(); err == nil {
			t.Errorf("%s: opened %q", name, tok)
		} else if !strings.HasPrefix(err.Error(), NotAuthenticated) {
			t.Errorf("%s: %v, want it to start with %q", name, err, NotAuthenticated)
		}
	}
}

func TestCheckReview(t *testing.T) {
	want := victimExpect()
	good := podReview("team-a", "sb1", "pod-uid-1")
	mod := func(f func(r *Review)) Review {
		r := good
		r.Extra = map[string][]string{ExtraPodName: {"sb1"}, ExtraPodUID: {"pod-uid-1"}}
		f(&r)
		return r
	}
	withUID := want
	withUID.PodUID = "pod-uid-1"
	otherUID := want
	otherUID.PodUID = "pod-uid-2"
	cases := []struct {
		name string
		r    Review
		want Expect
		ok   bool
	}{
		{"the sandbox's pod", good, want, true},
		{"the sandbox's pod, its UID known", good, withUID, true},
		{"another pod UID (the pod was replaced)", good, otherUID, false},
		{"not authenticated", mod(func(r *Review) { r.Authenticated = false }), want, false},
		{"no audience said", mod(func(r *Review) { r.Audiences = nil }), want, false},
		{"another audience", mod(func(r *Review) { r.Audiences = []string{"https://kubernetes.default.svc"} }), want, false},
		{"the same pod name in another namespace", podReview("team-b", "sb1", "u"), want, false},
		{"a namespace that starts alike", mod(func(r *Review) { r.Username = "system:serviceaccount:team-a-x:default" }), want, false},
		{"another pod of the namespace", podReview("team-a", "sb2", "u"), want, false},
		{"a user, not a service account", mod(func(r *Review) { r.Username = "team-a" }), want, false},
		{"a service account token without a pod", mod(func(r *Review) { delete(r.Extra, ExtraPodName) }), want, false},
		{"two pod names", mod(func(r *Review) { r.Extra[ExtraPodName] = []string{"sb2", "sb1"} }), want, false},
		{"no namespace expected", good, Expect{Identity: want.Identity, PodName: "sb1"}, false},
	}
	for _, c := range cases {
		err := CheckReview(c.r, testAud, c.want)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), NotAuthenticated) {
			t.Errorf("%s: %v does not start with %q", c.name, err, NotAuthenticated)
		}
	}
}

// The bridge's whole check of an agent's certificate (AgentCheck.Verify).
func TestAgentCheckVerify(t *testing.T) {
	ca, _ := NewCA(time.Now())
	id := Identity(idUID)
	victimToken := jwt(time.Now().Add(time.Hour), "victim")
	attackerToken := jwt(time.Now().Add(time.Hour), "attacker")
	neighbourToken := jwt(time.Now().Add(time.Hour), "neighbour")
	api := &fakeAPI{tokens: map[string]Review{
		victimToken:    podReview("team-a", "sb1", "u1"),
		attackerToken:  podReview("team-b", "sb1", "u2"), // same pod name, another namespace
		neighbourToken: podReview("team-a", "sb2", "u3"),
	}}
	check := &AgentCheck{CA: ca, Reviews: NewReviews(api.review, testAud, nil)}
	chain := func(c tls.Certificate) []*x509.Certificate { return []*x509.Certificate{c.Leaf} }
	victim := agentCert(t, ca, id, victimToken)
	if err := check.Verify(context.Background(), chain(victim), victimExpect(), time.Now()); err != nil {
		t.Fatalf("the victim's own agent: %v", err)
	}

	// An impostor's certificate with the victim's sealed token copied in:
	// a certificate of its own key (it lacks the victim's), same identity.
	key, _ := NewServingKey()
	tmpl := &x509.Certificate{SerialNumber: victim.Leaf.SerialNumber, DNSNames: []string{id}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtraExtensions: []pkix.Extension{{Id: OIDIdentityToken, Value: tokenExtension(victim)}}}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	copied, _ := x509.ParseCertificate(der)

	noToken, _ := NewServing(id, time.Now())
	otherCA, _ := NewCA(time.Now())
	for name, certs := range map[string][]*x509.Certificate{
		"no identity token":                                 chain(noToken),
		"the victim's sealed token in another cert":         {copied},
		"a token of the same pod name in another namespace": chain(agentCert(t, ca, id, attackerToken)),
		"a token of another pod of the namespace":           chain(agentCert(t, ca, id, neighbourToken)),
		"a token the API server does not know":              chain(agentCert(t, ca, id, "made-up")),
		"a token sealed to another CA":                      chain(agentCert(t, otherCA, id, victimToken)),
		"the victim's token for another identity":           chain(agentCert(t, ca, Identity("1b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"), victimToken)),
		"no certificate":                                    nil,
	} {
		if err := check.Verify(context.Background(), certs, victimExpect(), time.Now()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	// The API server unreachable: refused (fail closed), and not kept.
	api.err = errors.New("connection refused")
	fresh := agentCert(t, ca, id, jwt(time.Now().Add(time.Hour), "fresh"))
	api.tokens[jwt(time.Now().Add(time.Hour), "fresh")] = podReview("team-a", "sb1", "u1")
	if err := check.Verify(context.Background(), chain(fresh), victimExpect(), time.Now()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("review failed: %v, want refused with the cause", err)
	}
	api.err = nil
	if err := check.Verify(context.Background(), chain(fresh), victimExpect(), time.Now()); err != nil {
		t.Errorf("after the API server came back: %v", err)
	}
}

// Reviews asks once per token, keeps an accepted review until the token
// expires (at most reviewCacheTTL), and a refused one briefly.
func TestReviewsCache(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	long := jwt(now.Add(time.Hour), "long")
	short := jwt(now.Add(2*time.Minute), "short")
	api := &fakeAPI{tokens: map[string]Review{long: podReview("team-a", "sb1", "u"), short: podReview("team-a", "sb1", "u")}}
	rs := NewReviews(api.review, testAud, clock)
	ctx := context.Background()
	want := victimExpect()
	for range 3 {
		if err := rs.Check(ctx, long, want); err != nil {
			t.Fatal(err)
		}
	}
	if api.calls != 1 {
		t.Fatalf("%d reviews for one token, want 1", api.calls)
	}
	// A cached review is still checked against each sandbox dialled.
	other := want
	other.PodName = "sb2"
	if err := rs.Check(ctx, long, other); err == nil || api.calls != 1 {
		t.Errorf("cached review for another sandbox: %v (%d calls)", err, api.calls)
	}
	now = now.Add(reviewCacheTTL + time.Second)
	_ = rs.Check(ctx, long, want)
	if api.calls != 2 {
		t.Errorf("after %v: %d reviews, want the review asked again", reviewCacheTTL, api.calls)
	}
	// A token that expires sooner is kept only until then.
	_ = rs.Check(ctx, short, want)
	now = now.Add(2*time.Minute + time.Second)
	_ = rs.Check(ctx, short, want)
	if api.calls != 4 {
		t.Errorf("past the token's exp: %d reviews, want 4", api.calls)
	}
	// A refused token is refused again without asking, for refusedTTL.
	for range 3 {
		if err := rs.Check(ctx, "unknown", want); err == nil {
			t.Fatal("an unknown token passed")
		}
	}
	if api.calls != 5 {
		t.Errorf("refused token: %d reviews, want 5", api.calls)
	}
	now = now.Add(refusedTTL + time.Second)
	_ = rs.Check(ctx, "unknown", want)
	if api.calls != 6 {
		t.Errorf("refused token after %v: %d reviews, want 6", refusedTTL, api.calls)
	}
}

// The agent's certificate follows the token file the kubelet rotates: the
// same key, a new certificate with the new token, looked at once per
// tokenRecheck; a file that vanishes keeps the last certificate.
func TestServingCertsFollowTheTokenFile(t *testing.T) {
	ca, _ := NewCA(time.Now())
	id := Identity(idUID)
	file := filepath.Join(t.TempDir(), "token")
	write := func(s string) {
		// as the kubelet does: a new file renamed into place
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if _, err := NewServingCerts(id, ca.Cert.RawSubjectPublicKeyInfo, file, func() time.Time { return now }); err == nil {
		t.Error("no token file: started anyway")
	}
	write("  \n")
	if _, err := NewServingCerts(id, ca.Cert.RawSubjectPublicKeyInfo, file, func() time.Time { return now }); err == nil {
		t.Error("an empty token file: started anyway")
	}
	write("token-1\n")
	sc, err := NewServingCerts(id, ca.Cert.RawSubjectPublicKeyInfo, file, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	tokenOf := func() (string, *tls.Certificate) {
		c, err := sc.Get(nil)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := OpenToken(ca.Key, ca.Cert.RawSubjectPublicKeyInfo, tokenExtension(*c), c.Leaf.RawSubjectPublicKeyInfo, id)
		if err != nil {
			t.Fatal(err)
		}
		return tok, c
	}
	tok, first := tokenOf()
	if tok != "token-1" {
		t.Fatalf("token %q", tok)
	}
	write("token-2")
	if tok, _ := tokenOf(); tok != "token-1" {
		t.Errorf("re-read within %v: %q", tokenRecheck, tok)
	}
	now = now.Add(tokenRecheck)
	tok, second := tokenOf()
	if tok != "token-2" {
		t.Errorf("after the kubelet's rotation and %v: %q, want token-2", tokenRecheck, tok)
	}
	if string(first.Leaf.RawSubjectPublicKeyInfo) != string(second.Leaf.RawSubjectPublicKeyInfo) {
		t.Error("the key changed with the token")
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	now = now.Add(tokenRecheck)
	if tok, _ := tokenOf(); tok != "token-2" {
		t.Errorf("token file gone: %q, want the last certificate kept", tok)
	}
	write(strings.Repeat("x", maxTokenLen+1))
	now = now.Add(tokenRecheck)
	if tok, _ := tokenOf(); tok != "token-2" {
		t.Errorf("an oversized token file: %q, want the last certificate kept", tok)
	}
}

func TestPublicKeyMustMatchThePin(t *testing.T) {
	ca, _ := NewCA(time.Now())
	other, _ := NewCA(time.Now())
	if _, err := ParsePublicKey(PublicKey(ca.Cert), Pin(ca.Cert)); err != nil {
		t.Errorf("the CA's own key: %v", err)
	}
	if _, err := ParsePublicKey(PublicKey(other.Cert), Pin(ca.Cert)); err == nil {
		t.Error("another CA's key under the pin: accepted")
	}
	if _, err := ParsePublicKey("!!", Pin(ca.Cert)); err == nil {
		t.Error("not base64: accepted")
	}
}

func TestTokenExpiry(t *testing.T) {
	exp := time.Unix(1900000000, 0)
	if got, ok := tokenExpiry(jwt(exp, "x")); !ok || !got.Equal(exp) {
		t.Errorf("exp: %v %v", got, ok)
	}
	for _, bad := range []string{"", "a.b", "a.!!.c", "a." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"x"}`)) + ".c"} {
		if _, ok := tokenExpiry(bad); ok {
			t.Errorf("%q has an exp", bad)
		}
	}
}

// The red team's impostor (TestRedteamBridgeAuthenticatesAgent on branch
// redteam21), now refused: a fake agent that learns the identity from the
// SNI and makes a certificate for it on the spot, even with a real token of
// its own pod sealed to the CA, fails the bridge's handshake, and never
// gets the bridge's client certificate.
func TestImpostorFromTheSNIIsRefused(t *testing.T) {
	ca, _ := NewCA(time.Now())
	attackerToken := jwt(time.Now().Add(time.Hour), "attacker")
	api := &fakeAPI{tokens: map[string]Review{attackerToken: podReview("team-b", "imp", "u")}}
	want := victimExpect()
	bridge := ClientConfig(want, NewClientCerts(ca, nil).Get, &AgentCheck{CA: ca, Reviews: NewReviews(api.review, testAud, nil)})
	for name, token := range map[string]string{"no token": "", "its own pod's token": attackerToken} {
		var learned string
		impostor := &tls.Config{
			MinVersion: tls.VersionTLS13,
			ClientAuth: tls.RequestClientCert,
			GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
				learned = hi.ServerName
				key, _ := NewServingKey()
				c, err := ServingCert(key, hi.ServerName, ca.Cert.RawSubjectPublicKeyInfo, []byte(token), time.Now())
				return &c, err
			},
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan int, 1)
		go func() {
			c, err := lis.Accept()
			if err != nil {
				got <- -1
				return
			}
			defer c.Close()
			s := tls.Server(c, impostor)
			_ = s.SetDeadline(time.Now().Add(10 * time.Second))
			_ = s.Handshake()
			_, _ = s.Read(make([]byte, 1))
			got <- len(s.ConnectionState().PeerCertificates)
		}()
		c, err := tls.Dial("tcp", lis.Addr().String(), bridge)
		if err == nil {
			_ = c.Close()
			t.Errorf("%s: the bridge completed a handshake with an impostor", name)
		} else if !strings.Contains(err.Error(), NotAuthenticated) {
			t.Errorf("%s: %v, want %q", name, err, NotAuthenticated)
		}
		if n := <-got; n != 0 {
			t.Errorf("%s: the impostor received %d client certificates", name, n)
		}
		if learned != want.Identity {
			t.Errorf("%s: the impostor saw SNI %q", name, learned)
		}
		_ = lis.Close()
	}
}
