package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

// The same toss in a real browser: headless Chromium opens sandbox A's
// preview, whose page sets cookies for the parent domain from JavaScript
// and then goes to sandbox B's signed URL (for /headers); Chromium sends
// the tossed sandpod_preview cookie first (it is older than B's own). B
// must answer with its app's page, which sees the tossed app cookie (the
// part no proxy can tell apart, docs/previews.md) but none of sandpod's.
func TestPreviewCookieTossingInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("needs chromium (apt-get install chromium; .ci/run installs it)")
	}
	srv := startPreviewServer(t, "preview-secret")
	c := srv.Client()
	a, _ := claim(t, c, "python")
	b, _ := claim(t, c, "python")
	startPreviewApp(t, c, b.Name, "http", 8080, 0)
	exB := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: b.Name, Port: 8080})
	target := strings.Replace(exB.GetSignedUrl(), "/?", "/headers?", 1)
	page := `<html><body><script>
document.cookie = "sandpod_preview=forged; domain=preview.localhost; path=/";
document.cookie = "tossed=1; domain=preview.localhost; path=/";
location.href = ` + strconv.Quote(target) + `;
</script></body></html>`
	if err := writeFile(t, c, a.Name, "site/index.html", []byte(page)); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, c, a.Name, "cd site && setsid python3 -m http.server 8080 --bind 127.0.0.1 >../site.log 2>&1 </dev/null &"); r.exit.GetExitCode() != 0 {
		t.Fatalf("start A's site: %s", r.stderr)
	}
	exA := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: a.Name, Port: 8080})

	cctx, cancel := context.WithTimeout(ctx(t), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server", "--no-first-run",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--virtual-time-budget=15000", "--dump-dom", exA.GetSignedUrl())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := string(out)
	hostB := strings.TrimSuffix(strings.TrimPrefix(exB.GetUrl(), "http://"), "/")
	if !strings.Contains(dom, `"Host": "`+hostB+`"`) {
		t.Fatalf("the browser did not end on B's app (a tossed cookie locked it out?); DOM:\n%.2000s", dom)
	}
	if !strings.Contains(dom, "tossed=1") {
		t.Fatalf("precondition: the toss did not happen (B's app saw no tossed cookie); DOM:\n%.2000s", dom)
	}
	if strings.Contains(dom, "sandpod_preview") {
		t.Errorf("B's app saw sandpod's cookie; DOM:\n%.2000s", dom)
	}
}
