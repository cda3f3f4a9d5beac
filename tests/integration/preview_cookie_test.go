package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Cookie tossing between previews: a page of sandbox A runs
//
//	document.cookie = "sandpod_preview=forged; domain=preview.localhost; path=/headers"
//
// (JavaScript, which the proxy's rewriting of Set-Cookie headers does not
// see), and the browser sends that cookie to every preview under
// preview.localhost beside each host's own: first when its path is longer,
// last when it is not. These are the Cookie headers a browser then sends
// to sandbox B's preview, whose user opened B's signed URL before. None may
// lock the user out of B, and none of sandpod's cookies reaches B's app.
func TestPreviewCookieTossing(t *testing.T) {
	srv := startPreviewServer(t, "preview-secret") // tokens: the cookie is what lets the browser in
	c := srv.Client()
	a, _ := claim(t, c, "python")
	b, _ := claim(t, c, "python")
	startPreviewApp(t, c, a.Name, "http", 8080, 0)
	startPreviewApp(t, c, b.Name, "http", 8080, 0)
	exA := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: a.Name, Port: 8080})
	exB := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: b.Name, Port: 8080})
	hc := srv.httpClient()
	cookieOf := func(signed string) string {
		t.Helper()
		resp, body := get(t, hc, signed)
		for _, ck := range resp.Cookies() {
			if ck.Name == "sandpod_preview" {
				return ck.Value
			}
		}
		t.Fatalf("the signed URL set no preview cookie: %d %q", resp.StatusCode, body)
		return ""
	}
	own, theirs := cookieOf(exB.GetSignedUrl()), cookieOf(exA.GetSignedUrl())

	for name, header := range map[string]string{
		"a forged cookie, sent first":          "sandpod_preview=forged; sandpod_preview=" + own,
		"a forged cookie, sent last":           "sandpod_preview=" + own + "; sandpod_preview=forged",
		"A's own valid cookie, tossed":         "sandpod_preview=" + theirs + "; sandpod_preview=" + own,
		"a forged __Host- cookie beside":       "__Host-sandpod_preview=forged; sandpod_preview=" + own + "; app=1",
		"an expired-looking cookie, first":     "sandpod_preview=1.AAAA; sandpod_preview=" + own,
		"many forged cookies, then B's own":    strings.Repeat("sandpod_preview=x; ", 20) + "sandpod_preview=" + own,
		"B's own only, as before the tossing:": "sandpod_preview=" + own,
	} {
		resp, body := get(t, hc, exB.GetUrl()+"headers", "Cookie", header)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: B answered %d %q, want 200 (a tossed cookie must not lock the user out)", name, resp.StatusCode, body)
			continue
		}
		var h map[string]string
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatalf("%s: %q is not B's app's headers", name, body)
		}
		if strings.Contains(h["Cookie"], "sandpod_preview") || strings.Contains(h["Cookie"], own) {
			t.Errorf("%s: B's app saw sandpod's cookie: %q", name, h["Cookie"])
		}
	}
	// Tossed cookies alone do not let anyone in where tokens are needed.
	for _, header := range []string{"sandpod_preview=forged", "sandpod_preview=" + theirs} {
		resp, body := get(t, hc, exB.GetUrl()+"headers", "Cookie", header)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not valid here") {
			t.Errorf("Cookie %q alone: %d %q, want 401 naming the cookie", header, resp.StatusCode, body)
		}
	}
}
