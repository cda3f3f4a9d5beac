package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// benchApp answers every GET with 12 bytes, HTTP/1.1 keep-alive, in one
// write: python3 -m http.server writes headers and body apart, and Nagle's
// algorithm against the delayed ACK then adds 40 ms to every answer of a
// kept-alive connection, which would measure the app, not the preview.
const benchApp = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello bench\n")
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), H).serve_forever()
`

// previewGets starts a web server in box, exposes it and times small GETs
// through its preview URL (one at a time, one kept-alive connection).
func (l *localSuite) previewGets(ctx context.Context, box string) error {
	if l.s.preview == "" {
		return fmt.Errorf("serve has no preview listener")
	}
	if _, err := l.execTrue(ctx, box); err != nil {
		return err
	}
	if err := l.shell(ctx, box, "cat > p.py <<'EOF'\n"+benchApp+"EOF\nsetsid python3 p.py >/dev/null 2>&1 </dev/null &"); err != nil {
		return err
	}
	resp, err := l.api.ExposePort(ctx, &sandpodv1.ExposePortRequest{Sandbox: box, Port: 8000})
	if err != nil {
		return err
	}
	url := resp.GetExposed().GetUrl() + "p.txt"
	var d net.Dialer
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, l.s.preview)
		},
	}}
	get := func() (time.Duration, error) {
		t0 := time.Now()
		r, err := hc.Get(url)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			return 0, fmt.Errorf("GET %s: %s", url, r.Status)
		}
		return time.Since(t0), err
	}
	for i := 0; i < 10; i++ { // warm-up: connections on both hops
		if _, err := get(); err != nil {
			return err
		}
	}
	var ds []time.Duration
	for i := 0; i < l.p.Execs; i++ {
		dt, err := get()
		if err != nil {
			return err
		}
		ds = append(ds, dt)
	}
	l.previewGet.addRun(ms(ds))
	_, err = l.api.UnexposePort(ctx, &sandpodv1.UnexposePortRequest{Sandbox: box, Port: 8000})
	return err
}

// shell runs a shell command in box and waits for it to exit 0.
func (l *localSuite) shell(ctx context.Context, box, cmd string) error {
	st, err := l.api.Exec(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{Sandbox: box, Shell: cmd}}}); err != nil {
		return err
	}
	_ = st.CloseSend()
	for {
		msg, err := st.Recv()
		if err != nil {
			return fmt.Errorf("exec %q: %w", cmd, err)
		}
		if ex := msg.GetExit(); ex != nil {
			if ex.GetExitCode() != 0 {
				return fmt.Errorf("exec %q: exit %d", cmd, ex.GetExitCode())
			}
			return nil
		}
	}
}
