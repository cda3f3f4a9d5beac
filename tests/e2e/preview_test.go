package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// TestBridgePreviewWebServer: a web server in a real pod, under runc and
// under gVisor, reached through the bridge's preview port (its Service)
// with the bridge token: a page, a streamed download, a WebSocket echo and
// a signed URL; a suspend closes the port.
func TestBridgePreviewWebServer(t *testing.T) {
	t.Parallel()
	for _, runtime := range []string{"runc", GVisor} {
		t.Run(runtime, func(t *testing.T) {
			t.Parallel()
			env := Setup(t)
			ns := env.Namespace(t)
			tmpl := Template(ns, "python-web", PythonImage)
			if runtime == GVisor {
				rc := GVisor
				tmpl.Spec.RuntimeClassName = &rc
			}
			env.Apply(t, tmpl)
			c := env.bridgeClient(t, ns)
			ctx := Context(t)
			sb, err := c.Claim(ctx, "python-web")
			if err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile("../integration/testdata/preview_server.py")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sb.Files().WriteFile(ctx, "preview_server.py", src); err != nil {
				t.Fatal(err)
			}
			// It starts listening a second after ExposePort is called.
			if res, err := sb.Run(ctx, "setsid python3 preview_server.py http 8080 1 >app.log 2>&1 </dev/null &"); err != nil || res.ExitCode != 0 {
				t.Fatalf("start the server: %+v %v", res, err)
			}
			ex, err := sb.ExposePort(ctx, 8080)
			if err != nil {
				t.Fatal(err)
			}
			previewAddr := env.ServiceAddr(t, bridgeNamespace, bridgeService, "preview")
			u, _ := url.Parse(ex.URL)
			var d net.Dialer
			hc := &http.Client{
				Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return d.DialContext(ctx, network, previewAddr)
				}},
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}
			token := env.BridgeToken(t)
			get := func(path string, auth bool) (*http.Response, []byte) {
				t.Helper()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ex.URL+path, nil)
				if auth {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatalf("GET %s: read: %v", path, err)
				}
				return resp, b
			}
			if resp, body := get("", true); resp.StatusCode != 200 || string(body) != "hello from the sandbox\n" {
				t.Fatalf("GET / = %d %q", resp.StatusCode, body)
			}
			if resp, _ := get("", false); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("without the token: %d, want 401", resp.StatusCode)
			}
			const n = 20 << 20
			resp, body := get("big?n=20971520", true)
			want := sha256.Sum256(bytes.Repeat(func() []byte {
				b := make([]byte, 64<<10)
				for i := range b {
					b[i] = byte(i)
				}
				return b
			}(), n/(64<<10)))
			if resp.StatusCode != 200 || len(body) != n || sha256.Sum256(body) != want {
				t.Fatalf("download: %d, %d bytes, sha256 match %v", resp.StatusCode, len(body), sha256.Sum256(body) == want)
			}
			// A signed URL works without the token: 302 with a cookie.
			sreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, ex.SignedURL, nil)
			sresp, err := hc.Do(sreq)
			if err != nil {
				t.Fatal(err)
			}
			sresp.Body.Close()
			if sresp.StatusCode != http.StatusFound || len(sresp.Cookies()) == 0 {
				t.Errorf("signed URL: %d, cookies %v; want 302 with a cookie", sresp.StatusCode, sresp.Cookies())
			}

			cfg, _ := websocket.NewConfig("ws://"+u.Host+"/ws", ex.URL)
			cfg.Header = http.Header{"Authorization": {"Bearer " + token}}
			raw, err := net.Dial("tcp", previewAddr)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := websocket.NewClient(cfg, raw)
			if err != nil {
				t.Fatalf("websocket: %v", err)
			}
			_ = ws.SetDeadline(time.Now().Add(time.Minute))
			if err := websocket.Message.Send(ws, "echo me"); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := websocket.Message.Receive(ws, &got); err != nil || got != "echo me" {
				t.Fatalf("websocket echo: %q %v", got, err)
			}
			ws.Close()

			if err := sb.Suspend(ctx); err != nil {
				t.Fatal(err)
			}
			if resp, body := get("", true); resp.StatusCode != http.StatusNotFound {
				t.Errorf("after suspend: %d %q, want 404", resp.StatusCode, body)
			}
			// Refused at once, though the pod may still be stopping.
			if _, err := sb.ExposePort(ctx, 8080); !errors.Is(err, sandpod.ErrFailedPrecondition) || !strings.Contains(err.Error(), "suspended") {
				t.Errorf("expose on a suspended sandbox: %v", err)
			}
		})
	}
}
