package integration

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
}

func near(v, want uint32) bool { return v+24 >= want && v <= want+24 }
