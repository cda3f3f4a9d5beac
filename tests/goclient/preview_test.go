package goclient_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// A web server in a sandbox, exposed and fetched at its preview URL with
// net/http and PreviewTransport (which resolves *.localhost).
func TestExposePort(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")
	if _, err := sb.Run(ctx, "echo preview-ok > index.html; setsid python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &"); err != nil {
		t.Fatal(err)
	}
	ex, err := sb.ExposePort(ctx, 8000, sandpod.WithSignedURLTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if ex.Port != 8000 || ex.Protocol != sandpod.ProtocolHTTP || !strings.HasPrefix(ex.URL, "http://p8000-") || ex.SignedURL == "" || ex.ExpiresAt.IsZero() {
		t.Fatalf("exposed = %+v", ex)
	}
	hc := &http.Client{Transport: sandpod.PreviewTransport()}
	resp, err := hc.Get(ex.URL + "index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "preview-ok\n" {
		t.Fatalf("GET = %d %q", resp.StatusCode, body)
	}
	if _, err := sb.ExposePort(ctx, 8000); !errors.Is(err, sandpod.ErrAlreadyExists) {
		t.Errorf("second expose: %v, want ErrAlreadyExists", err)
	}
	if _, err := sb.ExposePort(ctx, 0); !errors.Is(err, sandpod.ErrInvalidArgument) {
		t.Errorf("port 0: %v, want ErrInvalidArgument", err)
	}
	if list, err := sb.ExposedPorts(ctx); err != nil || len(list) != 1 || list[0].URL != ex.URL {
		t.Errorf("ExposedPorts = %+v, %v", list, err)
	}
	if err := sb.UnexposePort(ctx, 8000); err != nil {
		t.Fatal(err)
	}
	if list, err := sb.ExposedPorts(ctx); err != nil || len(list) != 0 {
		t.Errorf("after unexpose: %+v, %v", list, err)
	}
}
