package mcp

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/sandpod/sandpod/bridge"
	sandpod "github.com/sandpod/sandpod/clients/go"
)

func TestVerifier(t *testing.T) {
	tokens := bridge.StaticTokens{{Secret: "s3cret"}, {Secret: "team", Namespaces: []string{"team-a"}}}
	cases := map[string]struct {
		token, namespace string
		wantErr          string // "" for let in
	}{
		"a token of the file":               {token: "s3cret", namespace: "default"},
		"a namespaced token in its own":     {token: "team", namespace: "team-a"},
		"an unknown token":                  {token: "guess", namespace: "default", wantErr: "missing or unknown bearer token"},
		"a namespaced token in another one": {token: "team", namespace: "default", wantErr: `namespace "default": this token may use only team-a`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := verifier([]bridge.Authenticator{tokens}, tc.namespace)(t.Context(), tc.token, nil)
			if tc.wantErr == "" {
				if err != nil || info == nil || info.UserID == "" {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want ErrInvalidToken saying %q", err, tc.wantErr)
			}
		})
	}
}

// Over HTTP a request without the token, or with another one, is refused
// before it reaches the MCP server.
func TestHTTPNeedsTheToken(t *testing.T) {
	srv := httpServer(t, bridge.StaticTokens{{Secret: "s3cret"}})
	for name, tc := range map[string]struct {
		header string
		want   int
	}{
		"no token":    {"", http.StatusUnauthorized},
		"wrong token": {"Bearer guess", http.StatusUnauthorized},
		"not bearer":  {"Basic czNjcmV0", http.StatusUnauthorized},
		"the token":   {"Bearer s3cret", http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			resp := post(t, srv.URL, initialize, map[string]string{"Authorization": tc.header})
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// httpServer serves the MCP endpoint behind tokens, over a sandpod client
// with no server (these tests call no tool).
func httpServer(t *testing.T, tokens bridge.StaticTokens) *httptest.Server {
	return httpServerWith(t, HTTPOptions{Authenticators: []bridge.Authenticator{tokens}, Namespace: "default"})
}

func httpServerWith(t *testing.T, o HTTPOptions) *httptest.Server {
	c, err := sandpod.Dial(t.Context(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s := New(c, Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.httpHandler(o))
	t.Cleanup(srv.Close)
	return srv
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// post sends one JSON-RPC message to the MCP endpoint with headers (an
// empty value is left out; "Host" sets the request's host).
func post(t *testing.T, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		switch {
		case v == "":
		case k == "Host":
			req.Host = v
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// A session answers only the token that opened it, and a loopback
// listener only requests that name a loopback host (DNS rebinding).
func TestHTTPSessionsAndHosts(t *testing.T) {
	srv := httpServer(t, bridge.StaticTokens{{Secret: "alice"}, {Secret: "bob"}})

	opened := post(t, srv.URL, initialize, map[string]string{"Authorization": "Bearer alice"})
	id := opened.Header.Get("Mcp-Session-Id")
	if opened.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", opened.StatusCode, id)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for name, tc := range map[string]struct {
		token, host string
		want        int
	}{
		"the session's token":     {"alice", "", http.StatusOK},
		"another token":           {"bob", "", http.StatusForbidden},
		"a host that is not ours": {"alice", "evil.example:80", http.StatusForbidden},
	} {
		t.Run(name, func(t *testing.T) {
			resp := post(t, srv.URL, list, map[string]string{"Authorization": "Bearer " + tc.token, "Host": tc.host,
				"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"})
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// Without tokens the HTTP transport listens on loopback only.
func TestHTTPWithoutTokensOnLoopbackOnly(t *testing.T) {
	c, err := sandpod.Dial(t.Context(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lis, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	err = New(c, Options{}).ServeHTTP(t.Context(), lis, HTTPOptions{})
	if err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("err = %v, want a refusal naming --token-file", err)
	}
}

// A caller's requests in flight count against --max-streams-per-caller,
// named by its token's caller: over it 429, another token still served.
func TestHTTPStreamsPerCaller(t *testing.T) {
	limits := bridge.NewStreamLimiter(1, "sandpod mcp")
	tokens := bridge.StaticTokens{{Secret: "alice"}, {Secret: "bob"}}
	srv := httpServerWith(t, HTTPOptions{Authenticators: []bridge.Authenticator{tokens}, Namespace: "default", Streams: limits})

	held, err := limits.Acquire("token #1") // alice's one stream, as a session's open GET
	if err != nil {
		t.Fatal(err)
	}
	if resp := post(t, srv.URL, initialize, map[string]string{"Authorization": "Bearer alice"}); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("alice over her limit: %d, want 429", resp.StatusCode)
	}
	if resp := post(t, srv.URL, initialize, map[string]string{"Authorization": "Bearer bob"}); resp.StatusCode != http.StatusOK {
		t.Errorf("bob: %d, want 200", resp.StatusCode)
	}
	held()
	if resp := post(t, srv.URL, initialize, map[string]string{"Authorization": "Bearer alice"}); resp.StatusCode != http.StatusOK {
		t.Errorf("alice after her stream ended: %d, want 200", resp.StatusCode)
	}
	if n := limits.Open("token #2"); n != 0 {
		t.Errorf("bob's ended requests still counted: %d", n)
	}
}
