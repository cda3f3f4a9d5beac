package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func get(t *testing.T, hc *http.Client, u string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A web server that starts listening 3 s after it is started is waited for,
// then reached with plain net/http: a page, a 50 MiB streamed download and
// a WebSocket echo.
func TestPreviewHTTPServer(t *testing.T) {
	srv := startPreviewServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	startPreviewApp(t, c, sb.Name, "http", 8080, 3)

	start := time.Now()
	ex := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("ExposePort returned after %s, before the server listened (it starts after 3 s)", waited)
	}
	if !strings.HasPrefix(ex.GetUrl(), "http://p8080-") || !strings.Contains(ex.GetUrl(), ".preview.localhost:") {
		t.Errorf("url = %q, want http://p8080-<id>.preview.localhost:PORT/", ex.GetUrl())
	}
	if ex.GetProtocol() != sandpodv1.PortProtocol_PORT_PROTOCOL_HTTP || ex.GetExpireTime() == nil || ex.GetSignedUrl() == "" {
		t.Errorf("exposed = %v, want protocol HTTP, a signed URL and an expiry", ex)
	}
	hc := srv.httpClient()

	resp, body := get(t, hc, ex.GetUrl())
	if resp.StatusCode != 200 || body != "hello from the sandbox\n" {
		t.Fatalf("GET / = %d %q", resp.StatusCode, body)
	}

	t.Run("large streamed download", func(t *testing.T) {
		const n = 50 << 20
		resp, err := hc.Get(ex.GetUrl() + "big?n=" + strconv.Itoa(n))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		h := sha256.New()
		got, err := io.Copy(h, resp.Body)
		if err != nil || got != n {
			t.Fatalf("read %d bytes (%v), want %d", got, err, n)
		}
		want := sha256.New()
		block := make([]byte, 64<<10)
		for i := range block {
			block[i] = byte(i)
		}
		for i := 0; i < n/len(block); i++ {
			want.Write(block)
		}
		if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
			t.Fatal("the download's sha256 differs from what the server sent")
		}
	})

	t.Run("websocket echo", func(t *testing.T) {
		u, _ := url.Parse(ex.GetUrl())
		cfg, err := websocket.NewConfig("ws://"+u.Host+"/ws", ex.GetUrl())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := net.Dial("tcp", srv.previewAddr)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := websocket.NewClient(cfg, raw)
		if err != nil {
			t.Fatalf("websocket handshake through the preview: %v", err)
		}
		defer ws.Close()
		_ = ws.SetDeadline(time.Now().Add(time.Minute))
		for _, msg := range []string{"hello", strings.Repeat("x", 70000)} {
			if err := websocket.Message.Send(ws, msg); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := websocket.Message.Receive(ws, &got); err != nil {
				t.Fatal(err)
			}
			if got != msg {
				t.Fatalf("echo of %d bytes came back as %d bytes", len(msg), len(got))
			}
		}
	})

	t.Run("credentials stay out of the sandbox", func(t *testing.T) {
		// No tokens: a preview cookie that does not verify (another
		// preview may have set it) is ignored and taken off, never an
		// answer of its own.
		for _, cookie := range []string{"sandpod_preview=x; app=1", "app=1", "__Host-sandpod_preview=x; app=1"} {
			resp, body := get(t, hc, ex.GetUrl()+"headers", "Cookie", cookie)
			var h map[string]string
			if err := json.Unmarshal([]byte(body), &h); err != nil || resp.StatusCode != 200 {
				t.Fatalf("Cookie %q: %d %q", cookie, resp.StatusCode, body)
			}
			if h["Cookie"] != "app=1" || !strings.HasPrefix(h["Host"], "p8080-") {
				t.Errorf("Cookie %q: the app saw Cookie %q and Host %q; want its own cookie and the preview host", cookie, h["Cookie"], h["Host"])
			}
		}
	})

	t.Run("cookies stay on the preview host", func(t *testing.T) {
		resp, _ := get(t, hc, ex.GetUrl()+"cookie")
		got := resp.Header.Values("Set-Cookie")
		if len(got) != 2 || strings.Contains(strings.ToLower(strings.Join(got, "|")), "domain") ||
			!strings.HasPrefix(got[0], "planted=1") || !strings.Contains(got[1], "HttpOnly") {
			t.Fatalf("Set-Cookie = %q; want both cookies, host-only (no Domain)", got)
		}
	})

	t.Run("already exposed, list, unexpose", func(t *testing.T) {
		_, err := c.ExposePort(ctx(t), &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
		wantCode(t, err, codes.AlreadyExists, ex.GetUrl())
		wantWhy(t, err, errinfo.ReasonPortAlreadyExposed)
		lr, err := c.ListExposedPorts(ctx(t), &sandpodv1.ListExposedPortsRequest{Sandbox: sb.Name})
		if err != nil || len(lr.GetPorts()) != 1 || lr.GetPorts()[0].GetUrl() != ex.GetUrl() {
			t.Fatalf("list = %v, %v; want the one exposed port", lr, err)
		}
		if _, err := c.UnexposePort(ctx(t), &sandpodv1.UnexposePortRequest{Sandbox: sb.Name, Port: 8080}); err != nil {
			t.Fatal(err)
		}
		if resp, body := get(t, hc, ex.GetUrl()); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "no such preview") {
			t.Fatalf("after unexpose: %d %q, want 404", resp.StatusCode, body)
		}
		_, err = c.UnexposePort(ctx(t), &sandpodv1.UnexposePortRequest{Sandbox: sb.Name, Port: 8080})
		wantCode(t, err, codes.NotFound, "not exposed")
		wantWhy(t, err, errinfo.ReasonPortNotExposed)
	})
}

// Bad input gets a clear answer.
func TestPreviewBadInput(t *testing.T) {
	srv := startPreviewServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	for _, tc := range []struct {
		req    *sandpodv1.ExposePortRequest
		code   codes.Code
		msg    string
		reason errinfo.Why
	}{
		{&sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 0}, codes.InvalidArgument, "port: must be 1..65535, got 0", errinfo.ReasonInvalidPort},
		{&sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 65536}, codes.InvalidArgument, "port: must be 1..65535", errinfo.ReasonInvalidPort},
		{&sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: -1}, codes.InvalidArgument, "port: must be 1..65535", errinfo.ReasonInvalidPort},
		{&sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 7070}, codes.InvalidArgument, "agent's own port", errinfo.ReasonInvalidPort},
		{&sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 80, Protocol: 9}, codes.InvalidArgument, "protocol", errinfo.ReasonInvalidPort},
		{&sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 80, SignedUrlTtl: dur(30 * 24 * time.Hour)}, codes.InvalidArgument, "signed_url_ttl", errinfo.ReasonInvalidDuration},
		{&sandpodv1.ExposePortRequest{Port: 80}, codes.InvalidArgument, "sandbox", errinfo.ReasonInvalidName},
		{&sandpodv1.ExposePortRequest{Sandbox: "gone-away", Port: 80}, codes.NotFound, "gone-away", errinfo.ReasonSandboxNotFound},
	} {
		_, err := c.ExposePort(ctx(t), tc.req)
		wantCode(t, err, tc.code, tc.msg)
		wantWhy(t, err, tc.reason)
	}

	// Nothing ever listens: the wait ends at the caller's deadline.
	dctx, cancel := context.WithTimeout(ctx(t), 3*time.Second)
	defer cancel()
	_, err := c.ExposePort(dctx, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 9999})
	wantCode(t, err, codes.DeadlineExceeded, "nothing answered on port 9999")
	wantWhy(t, err, errinfo.ReasonPortNotAnswering)

	// Signed URLs: tampered, expired; hosts that name no preview.
	startPreviewApp(t, c, sb.Name, "http", 8080, 0)
	ex := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080, SignedUrlTtl: dur(2 * time.Second)})
	hc := srv.httpClient()
	tampered := ex.GetSignedUrl()[:len(ex.GetSignedUrl())-2] + "AA"
	if strings.HasSuffix(ex.GetSignedUrl(), "AA") {
		tampered = ex.GetSignedUrl()[:len(ex.GetSignedUrl())-2] + "BB"
	}
	if resp, body := get(t, hc, tampered); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "does not match") {
		t.Errorf("tampered signature: %d %q, want 403 'does not match'", resp.StatusCode, body)
	}
	u, _ := url.Parse(ex.GetSignedUrl())
	sig := u.Query().Get("sandpod_preview_sig")
	exp, mac, _ := strings.Cut(sig, ".")
	later := ex.GetUrl() + "?sandpod_preview_sig=" + exp + "9." + mac
	if resp, body := get(t, hc, later); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "does not match") {
		t.Errorf("extended expiry: %d %q, want 403", resp.StatusCode, body)
	}
	if resp, _ := get(t, hc, ex.GetSignedUrl()); resp.StatusCode != http.StatusFound {
		t.Errorf("fresh signed URL: %d, want 302 to the page with a cookie", resp.StatusCode)
	}
	eventually(t, "the signed URL expires", func() bool {
		resp, body := get(t, hc, ex.GetSignedUrl())
		return resp.StatusCode == http.StatusForbidden && strings.Contains(body, "expired")
	})
	for _, host := range []string{"localhost", "p8080-zzzzzzzzzzzzzzzz.preview.localhost", "p70000-abc.preview.localhost"} {
		resp, _ := get(t, hc, "http://"+host+"/")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("host %s: %d, want 404", host, resp.StatusCode)
		}
	}
}

// With tokens, a preview needs the bearer token or the signed URL; the
// signed URL leaves a cookie for that host, and neither reaches the app.
func TestPreviewAuth(t *testing.T) {
	srv := startPreviewServer(t, "preview-secret")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	startPreviewApp(t, c, sb.Name, "http", 8080, 0)
	ex := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
	hc := srv.httpClient()
	if resp, body := get(t, hc, ex.GetUrl()); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "bearer token") {
		t.Fatalf("no credentials: %d %q, want 401", resp.StatusCode, body)
	}
	if resp, _ := get(t, hc, ex.GetUrl(), "Authorization", "Bearer wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d, want 401", resp.StatusCode)
	}
	resp, body := get(t, hc, ex.GetUrl()+"headers", "Authorization", "Bearer preview-secret")
	if resp.StatusCode != 200 || strings.Contains(body, "preview-secret") {
		t.Fatalf("bearer: %d %q; want 200 without the token in the app's headers", resp.StatusCode, body)
	}
	resp, _ = get(t, hc, ex.GetSignedUrl())
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/" {
		t.Fatalf("signed URL: %d to %q, want 302 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "sandpod_preview" {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.Domain != "" {
		t.Fatalf("cookie = %+v, want an HttpOnly host-only sandpod_preview cookie", cookie)
	}
	resp, body = get(t, hc, ex.GetUrl()+"headers", "Cookie", "sandpod_preview="+cookie.Value)
	if resp.StatusCode != 200 || strings.Contains(body, cookie.Value) {
		t.Fatalf("with the cookie: %d %q; want 200 without the cookie in the app's headers", resp.StatusCode, body)
	}
}

// Suspend and delete close the ports: open connections are cut, new
// requests find no preview.
func TestPreviewClosedOnSuspendAndDelete(t *testing.T) {
	srv := startPreviewServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	startPreviewApp(t, c, sb.Name, "http", 8080, 0)
	ex := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
	hc := srv.httpClient()

	resp, err := hc.Get(ex.GetUrl() + "slow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "tick.\n" {
		t.Fatalf("stream: %q %v", line, err)
	}
	cut := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, r)
		cut <- err
	}()
	if _, err := c.SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: sb.Name}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cut:
	case <-time.After(time.Minute):
		t.Fatal("the open stream was not cut by the suspend")
	}
	if resp, body := get(t, hc, ex.GetUrl()); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after suspend: %d %q, want 404", resp.StatusCode, body)
	}
	_, err = c.ExposePort(ctx(t), &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
	wantCode(t, err, codes.FailedPrecondition, "suspended")
	wantWhy(t, err, errinfo.ReasonSandboxSuspended)

	if _, err := c.ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: sb.Name}); err != nil {
		t.Fatal(err)
	}
	startPreviewApp(t, c, sb.Name, "http", 8080, 0)
	ex = expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
	if resp, _ := get(t, hc, ex.GetUrl()); resp.StatusCode != 200 {
		t.Fatalf("after resume and expose: %d", resp.StatusCode)
	}
	if _, err := c.DeleteSandbox(ctx(t), &sandpodv1.DeleteSandboxRequest{Name: sb.Name}); err != nil {
		t.Fatal(err)
	}
	if resp, body := get(t, hc, ex.GetUrl()); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after delete: %d %q, want 404", resp.StatusCode, body)
	}
	_, err = c.ExposePort(ctx(t), &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
	wantCode(t, err, codes.NotFound, sb.Name)
	wantWhy(t, err, errinfo.ReasonSandboxNotFound)
}

// A raw TCP port: the preview host takes an HTTP upgrade and then carries
// bytes both ways.
func TestPreviewTCP(t *testing.T) {
	srv := startPreviewServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	startPreviewApp(t, c, sb.Name, "tcp", 6000, 1)
	ex := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 6000, Protocol: sandpodv1.PortProtocol_PORT_PROTOCOL_TCP})
	u, _ := url.Parse(ex.GetUrl())
	conn, err := net.Dial("tcp", srv.previewAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: "+u.Host+"\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	if _, err := io.WriteString(conn, "ping over tcp\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "ping over tcp\n" {
		t.Fatalf("echo: %q %v", line, err)
	}
	if resp, body := get(t, srv.httpClient(), ex.GetUrl()); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Upgrade: tcp") {
		t.Fatalf("plain GET of a tcp port: %d %q, want 400", resp.StatusCode, body)
	}
}

// serve keeps its exposures and its signing key across a restart: the
// sandbox and its server outlive serve, and so do their links.
func TestPreviewSurvivesServeRestart(t *testing.T) {
	srv := startPreviewServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	startPreviewApp(t, c, sb.Name, "http", 8080, 0)
	ex := expose(t, c, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8080})
	srv.Restart(t)
	c = srv.Client()
	hc := srv.httpClient()
	if resp, body := get(t, hc, ex.GetUrl()); resp.StatusCode != 200 {
		t.Fatalf("after a restart: %d %q", resp.StatusCode, body)
	}
	if resp, body := get(t, hc, ex.GetSignedUrl()); resp.StatusCode != http.StatusFound {
		t.Fatalf("the signed URL after a restart: %d %q, want 302", resp.StatusCode, body)
	}
	lr, err := c.ListExposedPorts(ctx(t), &sandpodv1.ListExposedPortsRequest{Sandbox: sb.Name})
	if err != nil || len(lr.GetPorts()) != 1 {
		t.Fatalf("list after a restart: %v %v", lr, err)
	}
}

// `sandpod expose` as a user runs it: the URL and the signed URL of a web
// server in a sandbox; a second expose is "exists already" (68).
func TestCLIExpose(t *testing.T) {
	srv := startPreviewServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	startPreviewApp(t, c, sb.Name, "http", 8080, 1)
	cl := newCLI(t, srv.Addr())
	var ex struct {
		Sandbox, Protocol, URL string
		Port                   int
		SignedURL              string    `json:"signedURL"`
		ExpiresAt              time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal([]byte(cl.ok("expose", sb.Name, "8080", "-o", "json")), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Sandbox != sb.Name || ex.Port != 8080 || ex.Protocol != "http" || ex.SignedURL == "" || ex.ExpiresAt.IsZero() {
		t.Fatalf("expose -o json = %+v", ex)
	}
	if resp, body := get(t, srv.httpClient(), ex.URL); resp.StatusCode != 200 || body != "hello from the sandbox\n" {
		t.Fatalf("GET %s = %d %q", ex.URL, resp.StatusCode, body)
	}
	cl.run("expose", sb.Name, "8080").want(t, 68, "already exposed")
}
