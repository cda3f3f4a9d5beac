package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// needChromiumAndJupyter skips unless Debian's chromium and python3-notebook
// are installed (.ci/run installs both): a sandbox sees the host's /usr, so
// the notebook the host has is the one the sandbox runs.
func needChromiumAndJupyter(t *testing.T) string {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("needs chromium (apt-get install chromium; .ci/run installs it)")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import notebook").Run(); err != nil {
		t.Skip("needs Jupyter Notebook (apt-get install python3-notebook; .ci/run installs it)")
	}
	return chromium
}

// A Jupyter server inside a sandbox, opened by headless Chromium through
// its signed preview URL on a server with tokens: the signature, the
// redirect and the cookie work in a real browser, and the page is
// Jupyter's (its DOM, and its orange logo in the screenshot).
func TestPreviewJupyterInChromium(t *testing.T) {
	chromium := needChromiumAndJupyter(t)
	srv := startPreviewServer(t, "jupyter-secret")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	start := "setsid python3 -m notebook --no-browser --ip=127.0.0.1 --port=8888 " +
		"--NotebookApp.token= --NotebookApp.password= --NotebookApp.allow_remote_access=True " +
		">jupyter.log 2>&1 </dev/null &"
	if r := sh(t, c, sb.Name, start); r.exit.GetExitCode() != 0 {
		t.Fatalf("start jupyter: %s", r.stderr)
	}
	ectx, cancel := context.WithTimeout(ctx(t), 2*time.Minute) // Jupyter takes seconds to start
	defer cancel()
	resp, err := c.ExposePort(ectx, &sandpodv1.ExposePortRequest{Sandbox: sb.Name, Port: 8888})
	if err != nil {
		log, _ := readFile(t, c, sb.Name, "jupyter.log")
		t.Fatalf("expose 8888: %v\njupyter.log:\n%s", err, log)
	}
	signed := resp.GetExposed().GetSignedUrl()

	dir := t.TempDir()
	shot := filepath.Join(dir, "jupyter.png")
	if keep := os.Getenv("SANDPOD_SCREENSHOT_DIR"); keep != "" { // to look at it
		shot = filepath.Join(keep, "jupyter.png")
	}
	browse := func(args ...string) []byte {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx(t), 2*time.Minute)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--virtual-time-budget=15000", "--window-size=1280,900"}
		cmd := exec.CommandContext(cctx, chromium, append(append(base, args...), signed)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	dom := string(browse("--dump-dom"))
	if !strings.Contains(dom, "Jupyter") || !strings.Contains(dom, "notebook_list") {
		t.Fatalf("the page is not Jupyter's file browser; DOM:\n%.2000s", dom)
	}
	browse("--screenshot=" + shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Jupyter's logo is orange (#F37726); a 401/403/404 text page has none.
	orange := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, 0xF3) && near(g>>8, 0x77) && near(bl>>8, 0x26) {
				orange++
			}
		}
	}
	if orange < 50 {
		t.Fatalf("the screenshot (%s, %dx%d) has %d pixels of Jupyter's orange, want its logo", shot, b.Dx(), b.Dy(), orange)
	}
	t.Logf("screenshot %dx%d with %d orange logo pixels", b.Dx(), b.Dy(), orange)

	// A kernel, run over its WebSocket through the preview: Jupyter checks
	// the Origin against the Host, which the proxy keeps.
	base := resp.GetExposed().GetUrl()
	if got := runInKernel(t, srv, base, "jupyter-secret", "print(6 * 7)"); got != "42\n" {
		t.Fatalf("the kernel printed %q, want 42", got)
	}
}

// runInKernel starts a Jupyter kernel through the preview at base, runs
// code in it over the kernel's WebSocket and returns its stdout.
func runInKernel(t *testing.T, srv *previewServer, base, token, code string) string {
	t.Helper()
	hc := srv.httpClient()
	auth := "Bearer " + token
	// The _xsrf cookie Jupyter wants echoed on a POST.
	resp, _ := get(t, hc, base+"tree", "Authorization", auth)
	var xsrf string
	for _, ck := range resp.Cookies() {
		if ck.Name == "_xsrf" {
			xsrf = ck.Value
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"api/kernels", strings.NewReader(`{"name": "python3"}`))
	req.Header.Set("Authorization", auth)
	req.Header.Set("X-XSRFToken", xsrf)
	req.Header.Set("Cookie", "_xsrf="+xsrf)
	kresp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var kernel struct{ ID string }
	err = json.NewDecoder(kresp.Body).Decode(&kernel)
	kresp.Body.Close()
	if err != nil || kresp.StatusCode != http.StatusCreated {
		t.Fatalf("start a kernel: %d %v", kresp.StatusCode, err)
	}
	u, _ := url.Parse(base)
	cfg, err := websocket.NewConfig("ws://"+u.Host+"/api/kernels/"+kernel.ID+"/channels", strings.TrimSuffix(base, "/"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Header = http.Header{"Authorization": {auth}}
	raw, err := net.Dial("tcp", srv.previewAddr)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := websocket.NewClient(cfg, raw)
	if err != nil {
		t.Fatalf("the kernel's WebSocket through the preview: %v", err)
	}
	defer ws.Close()
	_ = ws.SetDeadline(time.Now().Add(2 * time.Minute))
	msg := map[string]any{
		"header":        map[string]any{"msg_id": "probe-1", "username": "test", "session": "probe", "msg_type": "execute_request", "version": "5.3"},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "channel": "shell", "buffers": []any{},
		"content": map[string]any{"code": code, "silent": false, "store_history": false, "user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true},
	}
	if err := websocket.JSON.Send(ws, msg); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		var m struct {
			Channel      string
			MsgType      string `json:"msg_type"`
			ParentHeader struct {
				MsgID string `json:"msg_id"`
			} `json:"parent_header"`
			Content struct {
				Text           string
				ExecutionState string `json:"execution_state"`
			}
		}
		if err := websocket.JSON.Receive(ws, &m); err != nil {
			t.Fatalf("kernel messages: %v (stdout so far %q)", err, out.String())
		}
		if m.ParentHeader.MsgID != "probe-1" {
			continue
		}
		switch {
		case m.MsgType == "stream":
			out.WriteString(m.Content.Text)
		case m.MsgType == "status" && m.Content.ExecutionState == "idle":
			return out.String()
		}
	}
}

func near(v, want uint32) bool { return v+24 >= want && v <= want+24 }
