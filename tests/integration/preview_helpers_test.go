package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// previewServer is a serve with its preview listener on.
type previewServer struct {
	*testserver.Server
	previewAddr string
}

func startPreviewServer(t *testing.T, token string) *previewServer {
	t.Helper()
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "preview-addr")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	srv := testserver.Start(t, testserver.Options{Token: token, ExtraArgs: []string{"--preview-listen", addr, "--preview-address-file", addrFile}})
	b, err := os.ReadFile(addrFile)
	if err != nil {
		t.Fatalf("preview address file: %v\n%s", err, srv.Log())
	}
	return &previewServer{Server: srv, previewAddr: string(b)}
}

// httpClient reaches every preview host at the preview listener, as a
// browser resolving *.localhost to loopback does (Go's resolver does not).
func (p *previewServer) httpClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, p.previewAddr)
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       2 * time.Minute,
	}
}

// startPreviewApp copies the test server into a sandbox and starts it in
// the background: mode http or tcp, after delay seconds.
func startPreviewApp(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, mode string, port int, delay float64) {
	t.Helper()
	src, err := os.ReadFile("testdata/preview_server.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(t, c, sandbox, "preview_server.py", src); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("setsid python3 preview_server.py %s %d %g >app.log 2>&1 </dev/null &", mode, port, delay)
	if r := sh(t, c, sandbox, cmd); r.exit.GetExitCode() != 0 {
		t.Fatalf("start app: %s", r.stderr)
	}
}

func expose(t *testing.T, c sandpodv1.SandboxServiceClient, req *sandpodv1.ExposePortRequest) *sandpodv1.ExposedPort {
	t.Helper()
	resp, err := c.ExposePort(ctx(t), req)
	if err != nil {
		t.Fatalf("expose %d: %v", req.GetPort(), err)
	}
	return resp.GetExposed()
}
